package kube

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
)

// Exec runs argv in pod p's container and waits until it ends, as
// `kubectl exec` does: the API server has the kubelet run it. It is how
// ctrbench signals an agent in a pod (the API has no call to signal a
// container). An exit code other than 0 is an error that gives the
// command's output.
func (c *Client) Exec(ctx context.Context, p *Pod, argv []string) error {
	container := p.Container()
	req := c.cs.RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, parameterCodec)
	// WebSockets first (Kubernetes 1.29 and later), SPDY where the
	// server or a proxy on the way refuses the upgrade — kubectl's order.
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	var out bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out}); err != nil {
		said := strings.TrimSpace(out.String())
		if said != "" {
			said = "; it said: " + said
		}
		return fmt.Errorf("running %q in container %s of pod %s/%s: %w%s", strings.Join(argv, " "), container, p.Namespace, p.Name, err, said)
	}
	return nil
}
