package kube

import (
	"github.com/ctrbench/ctrbench/internal/owner"

	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of the pod waits: a pod whose image is on its node is Ready in
// seconds; a pod deleted with grace period 0 goes in about one.
const (
	startWait     = 2 * time.Minute
	podGoneWait   = time.Minute
	logTailLines  = 20
	saRetryWindow = 10 * time.Second
)

// Pod is a started pod.
type Pod struct {
	Name, Namespace string
	Node            string
	IP              string
	QOS             string // its QoS class as the API gave it: Guaranteed, Burstable, BestEffort
	Lifecycle       Lifecycle
	// container is the container the calls on this value address: ""
	// for the pod's own, a sidecar's name on the value Sidecar gives.
	container string
}

// Sidecar is pod p as its sidecar name: the logs, exit and exec calls
// given it address that container.
func (p *Pod) Sidecar(name string) *Pod {
	s := *p
	s.container = name
	return &s
}

// Container is the name of the container p addresses.
func (p *Pod) Container() string {
	if p.container == "" {
		return containerName
	}
	return p.container
}

// StartPod creates the pod of spec and waits until it is Ready (for a
// RunToCompletion pod: until its container has started, or ended), at
// most startWait. Its lifecycle is stamped from a watch begun before the
// create. When the pod cannot get there (its image is not on the node,
// its container exits, no node fits it), the error says why, with the
// container's exit code and last log lines when it ended, and the pod is
// deleted.
func (c *Client) StartPod(ctx context.Context, spec PodSpec) (*Pod, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	campaign, err := c.campaignOf(ctx, spec.Namespace)
	if err != nil {
		return nil, err
	}
	kpod, err := spec.pod(owner.Labels(campaign, spec.Labels))
	if err != nil {
		return nil, err
	}
	begun := time.Now()
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	w, err := c.watchPod(ctx, spec.Namespace, spec.Name)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if w.initial != nil {
		return nil, fmt.Errorf("pod %s/%s already exists: delete it first (DeletePod)", spec.Namespace, spec.Name)
	}
	if err := c.createPod(ctx, kpod); err != nil {
		return nil, err
	}
	p := &Pod{Name: spec.Name, Namespace: spec.Namespace}
	var last *corev1.Pod
	for {
		ev, err := w.next(ctx)
		if err != nil {
			msg := fmt.Errorf("pod %s/%s not ready after %v (%s): %w", spec.Namespace, spec.Name, time.Since(begun).Round(time.Millisecond), stateOf(last), err)
			return nil, errors.Join(msg, c.DeletePod(context.WithoutCancel(ctx), p))
		}
		if ev.pod == nil {
			return nil, fmt.Errorf("pod %s/%s was deleted while starting", spec.Namespace, spec.Name)
		}
		last = ev.pod
		p.Lifecycle.observe(ev.pod, ev.at)
		p.Node, p.IP, p.QOS = ev.pod.Spec.NodeName, ev.pod.Status.PodIP, string(ev.pod.Status.QOSClass)
		if pr := problem(ev.pod, spec.RunToCompletion); pr != nil {
			return nil, c.failed(ctx, p, pr)
		}
		if (spec.RunToCompletion && started(ev.pod)) || ready(ev.pod) {
			return p, nil
		}
	}
}

// createPod creates pod, retrying while its namespace's default service
// account is not there yet (a fresh namespace's first second; its
// absence refuses the pod).
func (c *Client) createPod(ctx context.Context, pod *corev1.Pod) error {
	deadline := time.Now().Add(saRetryWindow)
	for {
		_, err := c.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "serviceaccount") || time.Now().After(deadline) {
			return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
		case <-time.After(pollEvery):
		}
	}
}

// failed is the error of a pod that will not get ready, with its log's
// tail when its container ended; it deletes the pod.
func (c *Client) failed(ctx context.Context, p *Pod, pr *podProblem) error {
	ctx = context.WithoutCancel(ctx)
	err := errors.New(pr.msg)
	if pr.exited {
		logs, lerr := c.tail(ctx, p, logTailLines)
		switch {
		case lerr != nil:
			err = fmt.Errorf("%s; its log could not be read: %v", pr.msg, lerr)
		case strings.TrimSpace(logs) == "":
			err = fmt.Errorf("%s; its log is empty", pr.msg)
		default:
			err = fmt.Errorf("%s; its log ends:\n%s", pr.msg, strings.TrimRight(logs, "\n"))
		}
	}
	return errors.Join(err, c.DeletePod(ctx, p))
}

// DeletePod deletes pod p at once (grace period 0, whatever the pod's)
// and waits until it is gone, at most podGoneWait. A pod already gone is
// no error.
func (c *Client) DeletePod(ctx context.Context, p *Pod) error {
	ctx, cancel := context.WithTimeout(ctx, podGoneWait)
	defer cancel()
	err := c.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	for {
		_, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("waiting for pod %s/%s to go: %w", p.Namespace, p.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s/%s still there %v after its deletion: see kubectl describe pod -n %s %s", p.Namespace, p.Name, podGoneWait, p.Namespace, p.Name)
		case <-time.After(pollEvery):
		}
	}
}

// Logs is the log of pod p's container so far.
func (c *Client) Logs(ctx context.Context, p *Pod) (string, error) {
	return c.logs(ctx, p, &corev1.PodLogOptions{Container: p.Container()})
}

// tail is the last n lines of pod p's container's log.
func (c *Client) tail(ctx context.Context, p *Pod, n int64) (string, error) {
	return c.logs(ctx, p, &corev1.PodLogOptions{Container: p.Container(), TailLines: &n})
}

func (c *Client) logs(ctx context.Context, p *Pod, opts *corev1.PodLogOptions) (string, error) {
	b, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("reading the log of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return string(b), nil
}

// WaitExit waits until the container of run-to-completion pod p ends and
// gives its exit code. It waits as long as ctx allows: how long a command
// runs is the caller's to bound.
func (c *Client) WaitExit(ctx context.Context, p *Pod) (int, error) {
	code, _, err := c.WaitEnd(ctx, p)
	return code, err
}

// WaitEnd is WaitExit that also says whether the pod was being deleted
// when its command ended (a deletion timestamp set: by its owner, or by an
// eviction or anyone else), or was gone before it ended.
func (c *Client) WaitEnd(ctx context.Context, p *Pod) (code int, deleted bool, err error) {
	w, err := c.watchPod(ctx, p.Namespace, p.Name)
	if err != nil {
		return 0, false, err
	}
	defer w.stop()
	pod := w.initial
	for {
		if pod == nil {
			return 0, true, fmt.Errorf("pod %s/%s is gone before the command of its container %s ended", p.Namespace, p.Name, p.Container())
		}
		if code, ok := exited(pod, p.Container()); ok {
			return int(code), pod.DeletionTimestamp != nil, nil
		}
		ev, err := w.next(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("waiting for the command of pod %s/%s to end (%s): %w", p.Namespace, p.Name, stateOf(pod), err)
		}
		pod = ev.pod
	}
}
