package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// podWatch follows one pod by name: its state when the watch began (a
// list), then every change, each stamped when it reached this process.
// Listing first and watching from the list's resource version misses
// nothing in between; a watch the server closes is resumed from the last
// version seen.
type podWatch struct {
	c        *Client
	ns, name string
	rv       string
	w        watch.Interface
	initial  *corev1.Pod // the pod as listed, nil when it did not exist
}

// podEvent is one state of a watched pod, and when it arrived; pod is nil
// once it is deleted.
type podEvent struct {
	pod *corev1.Pod
	at  time.Time
}

// watchPod starts following pod name of namespace ns.
func (c *Client) watchPod(ctx context.Context, ns, name string) (*podWatch, error) {
	p := &podWatch{c: c, ns: ns, name: name}
	if err := p.list(ctx); err != nil {
		return nil, err
	}
	if err := p.open(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *podWatch) selector() string {
	return fields.OneTermEqualSelector("metadata.name", p.name).String()
}

// list reads the pod's state now, and the version to watch from.
func (p *podWatch) list(ctx context.Context) error {
	l, err := p.c.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{FieldSelector: p.selector()})
	if err != nil {
		return fmt.Errorf("looking up pod %s/%s: %w", p.ns, p.name, err)
	}
	p.rv, p.initial = l.ResourceVersion, nil
	if len(l.Items) > 0 {
		p.initial = &l.Items[0]
	}
	return nil
}

// open starts the watch from p.rv.
func (p *podWatch) open(ctx context.Context) error {
	opts := metav1.ListOptions{FieldSelector: p.selector(), ResourceVersion: p.rv, AllowWatchBookmarks: true}
	if p.c.watchTimeout != 0 {
		opts.TimeoutSeconds = &p.c.watchTimeout
	}
	w, err := p.c.cs.CoreV1().Pods(p.ns).Watch(ctx, opts)
	if err != nil {
		return fmt.Errorf("watching pod %s/%s: %w", p.ns, p.name, err)
	}
	p.w = w
	return nil
}

// stop ends the watch.
func (p *podWatch) stop() {
	if p.w != nil {
		p.w.Stop()
	}
}

// next waits for the pod's next state.
func (p *podWatch) next(ctx context.Context) (podEvent, error) {
	for {
		select {
		case <-ctx.Done():
			return podEvent{}, ctx.Err()
		case e, ok := <-p.w.ResultChan():
			at := time.Now()
			if !ok { // the server ended the watch (its timeout): resume
				if err := p.open(ctx); err != nil {
					return podEvent{}, err
				}
				continue
			}
			switch e.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				pod, ok := e.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				p.rv = pod.ResourceVersion
				if e.Type == watch.Deleted {
					return podEvent{at: at}, nil
				}
				return podEvent{pod: pod, at: at}, nil
			case watch.Bookmark:
				if m, err := metaOf(e.Object); err == nil {
					p.rv = m.GetResourceVersion()
				}
			case watch.Error:
				err := apierrors.FromObject(e.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					// Too far behind: read the state anew.
					p.stop()
					if err := p.list(ctx); err != nil {
						return podEvent{}, err
					}
					if err := p.open(ctx); err != nil {
						return podEvent{}, err
					}
					return podEvent{pod: p.initial, at: at}, nil
				}
				return podEvent{}, fmt.Errorf("watching pod %s/%s: %w", p.ns, p.name, err)
			}
		}
	}
}

func metaOf(o any) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", o)
	}
	return m, nil
}
