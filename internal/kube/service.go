package kube

import (
	"github.com/ctrbench/ctrbench/internal/owner"

	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service is a created Service: where its clients reach it.
type Service struct {
	Name, Namespace string
	ClusterIP       string
	Port            int32
	NodePort        int32 // on every node's IP; 0 unless asked for
}

// CreateService makes a TCP Service name in namespace ns that sends port
// to targetPort of the pods selector matches; with nodePort, also on a
// port of every node (type NodePort). The cluster allocates both
// addresses when it creates the Service; its endpoints follow as the
// selected pods get Ready.
func (c *Client) CreateService(ctx context.Context, ns, name string, selector map[string]string, port, targetPort int32, nodePort bool) (*Service, error) {
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
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: selector,
			Ports:    []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(targetPort)}},
		},
	}
	got, err := c.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating service %s/%s: %w", ns, name, err)
	}
	s := &Service{Name: name, Namespace: ns, ClusterIP: got.Spec.ClusterIP, Port: port}
	if len(got.Spec.Ports) > 0 {
		s.NodePort = got.Spec.Ports[0].NodePort
	}
	return s, nil
}
