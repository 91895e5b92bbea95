package kube

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FollowLogs streams pod p's container's log (its standard output and
// error, line by line in the order written) from the start, until the
// container ends: the agent's events, as they are written.
func (c *Client) FollowLogs(ctx context.Context, p *Pod) (io.ReadCloser, error) {
	rc, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: p.Container(), Follow: true}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("following the log of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return rc, nil
}

// Tail is the last n lines of pod p's container's log.
func (c *Client) Tail(ctx context.Context, p *Pod, n int64) (string, error) { return c.tail(ctx, p, n) }

// StopPod asks pod p to end without waiting: its deletion with a grace
// period, so its container gets SIGTERM and grace to finish (a
// neighbour's loop then prints its result and exits); the pod goes once
// it has. A pod already gone is no error.
func (c *Client) StopPod(ctx context.Context, p *Pod, grace time.Duration) error {
	err := c.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(grace / time.Second))})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stopping pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// ContainerID is the runtime's ID of pod p's container ("" before it is
// created), without the runtime's prefix ("containerd://").
func (c *Client) ContainerID(ctx context.Context, p *Pod) (string, error) {
	pod, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("looking up pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == p.Container() {
			_, id, _ := strings.Cut(s.ContainerID, "://")
			return id, nil
		}
	}
	return "", nil
}

// NodeAnnotations are node name's annotations.
func (c *Client) NodeAnnotations(ctx context.Context, name string) (map[string]string, error) {
	n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("looking up node %s: %w", name, err)
	}
	return n.Annotations, nil
}
