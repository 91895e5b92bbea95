package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrbench/ctrbench/internal/owner"
)

// ServicePort is one TCP port of a Service: Port on its ClusterIP, sent
// to TargetPort of the pods it selects.
type ServicePort struct {
	Name             string
	Port, TargetPort int32
}

// Service is a created Service: where its clients reach it.
type Service struct {
	Name, Namespace string
	ClusterIP       string
	// Ports are its ports by name, as asked, each with its NodePort (on
	// every node's IP; 0 unless asked for).
	Ports map[string]CreatedPort
}

// CreatedPort is a Service's port as the cluster allocated it.
type CreatedPort struct {
	Port, NodePort int32
}

// CreateService makes a TCP Service name in namespace ns with ports, sent
// to the pods selector matches; with nodePort, also on a port of every
// node (type NodePort). The cluster allocates the addresses when it
// creates the Service; its endpoints follow as the selected pods get
// Ready, and each node's kube-proxy writes its rules after that, every
// port of the Service in one update.
func (c *Client) CreateService(ctx context.Context, ns, name string, selector map[string]string, ports []ServicePort, nodePort bool) (*Service, error) {
	campaign, err := c.campaignOf(ctx, ns)
	if err != nil {
		return nil, err
	}
	typ := corev1.ServiceTypeClusterIP
	if nodePort {
		typ = corev1.ServiceTypeNodePort
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: owner.Labels(campaign)},
		Spec:       corev1.ServiceSpec{Type: typ, Selector: selector},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: corev1.ProtocolTCP, Port: p.Port, TargetPort: intstr.FromInt32(p.TargetPort)})
	}
	got, err := c.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating service %s/%s: %w", ns, name, err)
	}
	s := &Service{Name: name, Namespace: ns, ClusterIP: got.Spec.ClusterIP, Ports: map[string]CreatedPort{}}
	for _, p := range got.Spec.Ports {
		s.Ports[p.Name] = CreatedPort{Port: p.Port, NodePort: p.NodePort}
	}
	return s, nil
}

// DeleteService deletes Service s; one already gone is no error.
func (c *Client) DeleteService(ctx context.Context, s *Service) error {
	err := c.cs.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting service %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
