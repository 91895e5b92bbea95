package swarm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/tailbuf"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Timeouts and the pace of watching a task.
const (
	startTimeout = 2 * time.Minute
	pollEvery    = 20 * time.Millisecond
	watchEvery   = 250 * time.Millisecond // the slowest look at a running task
	drainWait    = 100 * time.Millisecond // for a follow stream to end by itself after the task did; the record is complete by then
	stderrTail   = 8 << 10
	dataMount    = "/data"
)

// statePhase is the phase a task state begins: the swarm's timestamp of
// the state is when the phase before it ended.
var statePhase = map[string]vocab.Phase{
	"assigned":  vocab.Assigned,
	"preparing": vocab.Preparing,
	"starting":  vocab.Starting,
	"running":   vocab.Start,
	"complete":  vocab.Exit,
	"failed":    vocab.Exit,
	"shutdown":  vocab.Exit,
}

// instance is one service and its task.
type instance struct {
	*platform.Clock
	p       *Platform
	name    string
	service string
	node    node
	network vocab.Network
	ip      string
	seen    map[string]string

	stdout *io.PipeReader
	out    *io.PipeWriter
	stderr *tailbuf.Buffer

	mu      sync.Mutex
	task    engine.Task
	engine  map[vocab.Phase]time.Time // the swarm's own timestamps
	done    chan struct{}             // closed when the task ended and its output is all delivered
	removed bool
	cancel  context.CancelFunc // ends the watcher
}

// Start implements platform.Platform: a service of one task on the node
// spec places it on; it returns once the task runs (or has ended).
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	// The last trial's tasks leave their nodes first, so that their
	// teardown is not in this trial's window (nor in its timings).
	if err := p.settle(ctx); err != nil {
		return nil, err
	}
	requested := time.Now()
	sp, nd, overlay, vxlan, err := p.serviceSpec(spec)
	if err != nil {
		return nil, err
	}

	// The create is not cancelled by Ctrl-C: a service made by a request
	// abandoned in flight would have no one to remove it.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer ccancel()
	id, err := p.mgr.CreateService(cctx, sp)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	in := &instance{Clock: platform.NewClock(requested), p: p, name: sp.Name, service: id, network: spec.Network,
		stdout: pr, out: pw, stderr: tailbuf.New(stderrTail), engine: map[vocab.Phase]time.Time{}, done: make(chan struct{})}
	in.Mark(vocab.Create)
	p.mu.Lock()
	p.live[in] = true
	p.services = append(p.services, id)
	p.mu.Unlock()
	if err := in.awaitRunning(ctx); err != nil {
		return nil, errors.Join(err, in.Remove(context.WithoutCancel(ctx)))
	}
	in.mu.Lock()
	t := in.task
	in.mu.Unlock()
	p.mu.Lock()
	in.node = p.byID[t.NodeID]
	p.mu.Unlock()
	if in.node.id == "" {
		in.node = nd
	}
	switch spec.Network {
	case vocab.Host, "":
		in.ip = in.node.addr
	default:
		in.ip, _, _ = strings.Cut(t.Addrs[overlay.ID], "/")
	}
	in.seen = seen(spec, sp.Name, in, t, overlay, vxlan)
	if spec.Image != nil {
		p.mu.Lock()
		in.seen[platform.SeenImage], in.seen[platform.SeenImageID] = spec.Image.String(), p.users[spec.Image.Key()].BaseID
		p.mu.Unlock()
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in.cancel = cancel
	go in.watch(wctx)
	return in, nil
}

// serviceSpec is the service of an instance: its image and agent, labels,
// placement on a node (nd, when its host is one), network (overlay, on an
// overlay, and the swarm's VXLAN port), storage and limits.
func (p *Platform) serviceSpec(spec platform.InstanceSpec) (sp engine.ServiceSpec, nd node, overlay engine.Overlay, vxlan uint32, err error) {
	p.mu.Lock()
	if p.closed || !p.prepared {
		p.mu.Unlock()
		return engine.ServiceSpec{}, node{}, engine.Overlay{}, 0, errors.New("swarm platform: Start before Prepare or after Close")
	}
	labels := map[string]string{}
	maps.Copy(labels, p.setup.Labels)
	maps.Copy(labels, spec.Labels)
	sp = engine.ServiceSpec{Name: swarmName(spec.Name), Image: p.imageID, Labels: labels}
	if spec.Image != nil {
		u, ok := p.users[spec.Image.Key()]
		if !ok {
			p.mu.Unlock()
			return engine.ServiceSpec{}, node{}, engine.Overlay{}, 0, fmt.Errorf("swarm: %s: image %s not prepared (Setup.Images lacks it)", spec.Name, spec.Image)
		}
		sp.Image, sp.Env = p.userIDs[spec.Image.Key()], invocation.HandOver(u.WorkingDir, u.Command)
	}
	switch {
	case spec.Node != "":
		k, v, isLabel := strings.Cut(spec.Node, "=")
		if isLabel {
			sp.Constraints = []string{"node.labels." + k + "==" + v}
		} else {
			sp.Constraints = []string{"node.hostname==" + spec.Node}
		}
	case spec.Host > 0:
		if spec.Host > len(p.nodes) {
			p.mu.Unlock()
			return engine.ServiceSpec{}, node{}, engine.Overlay{}, 0, fmt.Errorf("swarm: %s is placed on node %d, and the swarm has %d", spec.Name, spec.Host, len(p.nodes))
		}
		nd = p.nodes[spec.Host-1]
		sp.Constraints = []string{"node.id==" + nd.id}
	}
	switch spec.Network {
	case vocab.Host, "":
		sp.Network = "host"
	case vocab.Overlay, vocab.OverlayEncrypted:
		ov, ok := p.networks[spec.Network]
		if !ok {
			p.mu.Unlock()
			return engine.ServiceSpec{}, node{}, engine.Overlay{}, 0, fmt.Errorf("swarm: network %s was not prepared", spec.Network)
		}
		sp.Network = ov.ID
	default:
		p.mu.Unlock()
		return engine.ServiceSpec{}, node{}, engine.Overlay{}, 0, fmt.Errorf("swarm: no network %s here", spec.Network)
	}
	overlay = p.networks[spec.Network]
	vxlan = p.state.VXLANPort
	p.mu.Unlock()

	inv := spec.Agent
	switch spec.Storage {
	case "", vocab.Layer:
	case vocab.Tmpfs:
		sp.Tmpfs, inv.DataDir = dataMount, dataMount
	default:
		return engine.ServiceSpec{}, node{}, engine.Overlay{}, 0, fmt.Errorf("swarm: no storage %s here", spec.Storage)
	}
	sp.Args, sp.Env = inv.Args(), append(sp.Env, inv.Env()...)
	sp.NanoCPUs = int64(spec.Limits.CPUs * 1e9)
	sp.MemoryBytes = spec.Limits.MemoryBytes
	return sp, nd, overlay, vxlan, nil
}

// seen is what the instance records of itself: its node, task, service,
// address and network.
func seen(spec platform.InstanceSpec, service string, in *instance, t engine.Task, overlay engine.Overlay, vxlan uint32) map[string]string {
	m := map[string]string{
		"node": in.node.hostname, "node.index": strconv.Itoa(in.node.index), "node.addr": in.node.addr,
		"task": t.ID, "service": service, "ip": in.ip,
	}
	if spec.Network == vocab.Host || spec.Network == "" {
		m["network.driver"] = "host"
	} else {
		m["network.driver"] = overlay.Driver
		m["network.name"] = overlay.Name
		m["network.subnet"] = overlay.Subnet
		m["network.mtu"] = overlay.MTU
		m["network.vxlan_port"] = strconv.FormatUint(uint64(vxlan), 10)
		m["network.encrypted"] = strconv.FormatBool(overlay.Encrypted)
	}
	return m
}

// observe reads the task and records the swarm's timestamps of the states
// it has not seen yet; it returns the task.
func (in *instance) observe(ctx context.Context) (engine.Task, bool, error) {
	t, ok, err := in.p.mgr.ServiceTask(ctx, in.service)
	if err != nil || !ok {
		return t, ok, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.task = t
	if _, seen := in.engine[vocab.Create]; !seen && !t.CreatedAt.IsZero() {
		in.engine[vocab.Create] = t.CreatedAt
	}
	if ph, known := statePhase[t.State]; known {
		if _, seen := in.engine[ph]; !seen {
			in.engine[ph] = t.At
		}
		// By now every phase up to this one has ended, seen or not.
		for _, q := range vocab.Phases {
			if !slices.Contains(Caps.Phases, q) || q == vocab.Create {
				continue
			}
			in.Mark(q)
			if q == ph {
				break
			}
		}
	}
	return t, true, nil
}

// awaitRunning waits until the task runs, or has ended (an agent that
// failed at once, whose output tells why); a task the swarm rejected or
// could not start is an error.
func (in *instance) awaitRunning(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		t, ok, err := in.observe(ctx)
		if err != nil {
			return err
		}
		if ok && (t.Running() || t.Terminal()) {
			if t.Terminal() && t.ContainerID == "" {
				return fmt.Errorf("swarm: task of %s %s: %s", in.name, t.State, strings.TrimSpace(t.Err+" "+t.Message))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			state := "no task"
			if ok {
				state = t.State + " " + t.Message + " " + t.Err
			}
			return fmt.Errorf("swarm: %s did not run within %s (%s): %w", in.name, startTimeout, strings.TrimSpace(state), ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// watch streams the task's output while it runs and, once it has ended,
// delivers what the stream had not (a follow stream may end before the
// last lines came), then closes Stdout and done.
func (in *instance) watch(ctx context.Context) {
	defer close(in.done)
	out := &counter{w: in.out}
	in.mu.Lock()
	taskID := in.task.ID
	in.mu.Unlock()
	sctx, scancel := context.WithCancel(ctx)
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		_ = in.p.mgr.TaskLogs(sctx, taskID, true, out, io.Discard)
	}()
	// Every look is a request to the manager: every 20 ms for the first
	// second (a short task's exit is timed to the poll), then backing off
	// to watchEvery, so a hundred long-running tasks do not keep the
	// manager busy.
	every, since := pollEvery, time.Now()
	for {
		t, ok, err := in.observe(ctx)
		if err == nil && ok && t.Terminal() {
			break
		}
		select {
		case <-ctx.Done():
			scancel()
			<-streamed
			in.out.CloseWithError(errors.New("the instance was removed"))
			return
		case <-time.After(every):
		}
		if time.Since(since) > time.Second {
			every = min(every*2, watchEvery)
		}
	}
	select {
	case <-streamed:
	case <-time.After(drainWait):
	}
	scancel()
	<-streamed
	// The whole output, from the swarm's record: what the stream missed.
	all, errOut, err := record(ctx, func(ctx context.Context, stdout, stderr io.Writer) error {
		return in.p.mgr.TaskLogs(ctx, taskID, false, stdout, stderr)
	}, recordTries, recordWait)
	if err == nil {
		if rest := all; int64(len(rest)) > out.n {
			_, _ = in.out.Write(rest[out.n:])
		}
		_, _ = in.stderr.Write(errOut)
	} else {
		fmt.Fprintf(in.stderr, "\nswarm: the task's log record (what the stream missed) did not come: %v; the output is what the stream delivered (%d bytes)", err, out.n)
	}
	in.out.Close()
}

// How long one read of a task's log record may take, and how many are
// made: the swarm's log API sometimes never ends a request (moby/moby
// #38640, docker/cli#4678), and a read that hangs would hold the trial,
// and the campaign, for ever.
const (
	recordWait  = 15 * time.Second
	recordTries = 3
)

// record reads a finished task's whole output with fetch, each read
// bounded by wait and made anew (from the start) up to tries times; the
// output of a read that did not end is dropped. It stops early when ctx
// ends (the instance is being removed).
func record(ctx context.Context, fetch func(ctx context.Context, stdout, stderr io.Writer) error, tries int, wait time.Duration) (stdout, stderr []byte, err error) {
	var errs []error
	for i := range tries {
		var o, e bytes.Buffer
		rctx, cancel := context.WithTimeout(ctx, wait)
		err := fetch(rctx, &o, &e)
		timedOut := rctx.Err() != nil
		cancel()
		if err == nil && !timedOut {
			return o.Bytes(), e.Bytes(), nil
		}
		if ctx.Err() != nil {
			return nil, nil, errors.Join(append(errs, ctx.Err())...)
		}
		if err == nil {
			err = context.DeadlineExceeded
		}
		errs = append(errs, fmt.Errorf("read %d of %d (bounded by %s): %w", i+1, tries, wait, err))
	}
	return nil, nil, errors.Join(errs...)
}

// Stdout implements platform.Instance.
func (in *instance) Stdout() io.Reader { return in.stdout }

// IP implements platform.Instance: its overlay address as the swarm
// assigned it, or on the host network its node's address.
func (in *instance) IP() string { return in.ip }

// NetNSPath implements platform.Instance: none ctrbench wires (a task's
// networks are the swarm's, on its nodes).
func (in *instance) NetNSPath() string { return "" }

// Wait implements platform.Instance.
func (in *instance) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return platform.Exit{}, ctx.Err()
	}
	in.mu.Lock()
	t := in.task
	in.mu.Unlock()
	ex := platform.Exit{Code: t.ExitCode, Stderr: in.stderr.String()}
	if t.ContainerID == "" || t.State == "rejected" || t.State == "orphaned" {
		ex.Code = -1
		ex.Stderr = strings.TrimSpace(ex.Stderr + "\nswarm: task " + t.State + ": " + t.Err + " " + t.Message)
	}
	return ex, nil
}

// Stop implements platform.Instance: the service scales to no task, so
// the swarm sends the agent SIGTERM.
func (in *instance) Stop(ctx context.Context) error { return in.p.mgr.ScaleToZero(ctx, in.service) }

// Go implements platform.Goer where the task's node engine is reachable
// (an emulated swarm): the agent's container gets SIGUSR1.
func (in *instance) Go(ctx context.Context) error {
	in.mu.Lock()
	cid := in.task.ContainerID
	in.mu.Unlock()
	if in.node.engine == nil || cid == "" {
		return errors.New("swarm: on a user's swarm a task's container cannot be signalled from here (its node's engine is not reachable): run one copy per cell")
	}
	return in.node.engine.Signal(ctx, cid, "USR1")
}

// Remove implements platform.Instance: the service goes; the swarm
// removes its task's container.
func (in *instance) Remove(ctx context.Context) error {
	in.mu.Lock()
	if in.removed {
		in.mu.Unlock()
		return nil
	}
	in.removed = true
	in.mu.Unlock()
	err := in.p.mgr.RemoveService(ctx, in.service)
	if err == nil {
		in.mu.Lock()
		cid := in.task.ContainerID
		in.mu.Unlock()
		in.p.mu.Lock()
		in.p.removed = append(in.p.removed, in.service)
		if in.p.emu != nil && cid != "" {
			in.p.removedOn = append(in.p.removedOn, nodeContainer{index: in.node.index, id: cid})
		}
		in.p.mu.Unlock()
	}
	if in.cancel != nil {
		in.cancel()
		<-in.done
	} else {
		in.out.Close()
	}
	in.Mark(vocab.Remove)
	in.p.mu.Lock()
	delete(in.p.live, in)
	in.p.mu.Unlock()
	return err
}

// EngineTimings implements platform.EngineTimer: the task's states as the
// swarm stamped them (a state passed between two looks is absent).
func (in *instance) EngineTimings(context.Context) (map[vocab.Phase]time.Time, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.engine), nil
}

// Seen implements platform.Seer: the node, the task and its network as
// the swarm recorded them.
func (in *instance) Seen() map[string]string { return maps.Clone(in.seen) }
