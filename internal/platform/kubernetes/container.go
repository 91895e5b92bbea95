package kubernetes

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// follower is the agent in one container of a pod, followed from its
// start: its log (the agent's standard output) and its exit.
type follower struct {
	c   *kube.Client
	pod *kube.Pod // addressing the container

	stdout io.ReadCloser // the container's log, followed
	done   chan struct{} // closed when the agent's exit is known

	mu      sync.Mutex
	code    int
	waitErr error
	// vanished: the pod was being deleted when the agent ended, and not
	// by ctrbench.
	vanished bool
}

// follow follows the agent in pod's container until ctx ends; ended is
// called once its exit is known, with whether the pod was being deleted
// then, and says whether that deletion was someone else's.
func follow(ctx context.Context, c *kube.Client, pod *kube.Pod, ended func(deleted bool) (vanished bool)) (*follower, error) {
	stream, err := c.FollowLogs(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	f := &follower{c: c, pod: pod, done: make(chan struct{})}
	f.stdout = newMended(ctx, stream, f.done, func(ctx context.Context) (string, error) { return c.Logs(ctx, pod) })
	go func() {
		code, deleted, err := c.WaitEnd(ctx, pod)
		vanished := ended(deleted)
		f.mu.Lock()
		f.code, f.waitErr, f.vanished = code, err, vanished
		f.mu.Unlock()
		close(f.done)
	}()
	return f, nil
}

// Stdout implements platform.Instance: the container's log, which holds
// the agent's standard output and error, line by line.
func (f *follower) Stdout() io.Reader { return f.stdout }

// Wait implements platform.Instance. A container's log holds the agent's
// standard error among its output: a failed agent's Stderr is the log's
// last lines.
func (f *follower) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-f.done:
	case <-ctx.Done():
		return platform.Exit{}, ctx.Err()
	}
	f.mu.Lock()
	code, err, vanished := f.code, f.waitErr, f.vanished
	f.mu.Unlock()
	if err != nil {
		return platform.Exit{Code: -1, Stderr: err.Error(), Vanished: true}, nil
	}
	ex := platform.Exit{Code: code, Vanished: vanished}
	if vanished {
		ex.Stderr = fmt.Sprintf("pod %s/%s was deleted by something else than ctrbench (an eviction, kubectl delete) while its agent ran", f.pod.Namespace, f.pod.Name)
		return ex, nil
	}
	if code != 0 {
		tail, terr := f.c.Tail(context.WithoutCancel(ctx), f.pod, stderrLines)
		if terr != nil {
			tail = terr.Error()
		}
		ex.Stderr = tail
	}
	return ex, nil
}

// signal sends the container's agent the signal what names (`agent
// signal`), through exec: the API has no call to signal a container.
func (f *follower) signal(ctx context.Context, what string) error {
	if err := f.c.Exec(ctx, f.pod, []string{image.BinaryPath, "agent", "signal", what}); err != nil {
		return fmt.Errorf("kubernetes: the %s signal: %w", what, err)
	}
	return nil
}

// close ends the follow, once ctx's cancellation has: the exit is known
// or abandoned.
func (f *follower) close() {
	<-f.done
	f.stdout.Close()
}

// sidecar is an agent beside a pod's own (InstanceSpec.Beside): an
// Instance of its own, but for its pod's address, timings and removal.
type sidecar struct {
	*follower
	pod *instance
}

var _ platform.Instance = (*sidecar)(nil)

// IP implements platform.Instance: its pod's.
func (s *sidecar) IP() string { return s.pod.IP() }

// NetNSPath implements platform.Instance: none ctrbench wires.
func (s *sidecar) NetNSPath() string { return "" }

// Stop implements platform.Instance: its agent alone is told to stop.
func (s *sidecar) Stop(ctx context.Context) error { return s.signal(ctx, "stop") }

// Remove implements platform.Instance: its pod's Remove removes it.
func (s *sidecar) Remove(context.Context) error { return nil }

// Timings implements platform.Instance: its pod's.
func (s *sidecar) Timings() platform.Timings { return s.pod.Timings() }
