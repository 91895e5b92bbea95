package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node is what a trial's placement needs to know of a cluster's node.
type Node struct {
	Name       string
	InternalIP string
	CPUMilli   int64 // allocatable CPU, in thousandths of a core
	Memory     int64 // allocatable memory, bytes
	Ready      bool
	Kubelet    string // kubelet version, e.g. "v1.34.4"
	Runtime    string // container runtime and version, e.g. "containerd://1.6.20"
	Labels     map[string]string
	// Annotations are what a node says of itself beyond labels (the test
	// cluster's: where its containerd and network namespace are).
	Annotations map[string]string
}

// Nodes lists the cluster's nodes, in the API's order (by name).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of %s: %w", c.host, err)
	}
	nodes := make([]Node, 0, len(list.Items))
	for _, n := range list.Items {
		nodes = append(nodes, nodeOf(&n))
	}
	return nodes, nil
}

func nodeOf(n *corev1.Node) Node {
	node := Node{
		Name:        n.Name,
		CPUMilli:    n.Status.Allocatable.Cpu().MilliValue(),
		Memory:      n.Status.Allocatable.Memory().Value(),
		Kubelet:     n.Status.NodeInfo.KubeletVersion,
		Runtime:     n.Status.NodeInfo.ContainerRuntimeVersion,
		Labels:      n.Labels,
		Annotations: n.Annotations,
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && node.InternalIP == "" {
			node.InternalIP = a.Address
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			node.Ready = cond.Status == corev1.ConditionTrue
		}
	}
	return node
}
