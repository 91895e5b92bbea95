package runner

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// instances are what one trial started, removed together at its end.
type instances struct {
	env *Env
	seq int
	// linger: the trial's agents may wait after their result to be
	// removed (chain trials; a lifecycle trial times their exits).
	linger bool

	mu      sync.Mutex
	started []*watched
	// serial are those of a platform whose instances must end one at a
	// time (platform.EndOneAtATime, by the engine in use): removed one
	// after another, the others all at once.
	serial []*watched
	detach []func() error
}

// started is an agent running as its role is placed.
type started struct {
	*watched
	role plan.Role
	ip   string // its own address ("" in its host's namespace)
}

// start launches one agent as role r places it: on its emulated host, in
// its network (wired by the lab after it starts, or joining the first
// instance of its pair — *loopOwner — for loopback).
func (in *instances) start(ctx context.Context, r plan.Role, name string, inv invocation.Agent, loopOwner *string) (*started, error) {
	return in.startWith(ctx, r, name, inv, loopOwner, platform.InstanceSpec{})
}

// startWith is start with what the role's placement does not say, in
// more: a server's more ports its engine publishes (a published network)
// and how an orchestrator tells it is ready, agents beside it in its pod.
func (in *instances) startWith(ctx context.Context, r plan.Role, name string, inv invocation.Agent, loopOwner *string, more platform.InstanceSpec) (*started, error) {
	isp := platform.InstanceSpec{Name: name, Network: r.Provision.Platform, Storage: r.Storage, Limits: r.Limits, Options: r.Options, Image: r.Image,
		Publish: more.Publish, Beside: more.Beside, Ready: more.Ready}
	cluster, isCluster := platform.ClusterOf(r.Driver.Caps)
	if isCluster {
		isp.Host, isp.Node = r.Host, r.Node
	}
	if r.InHostNS() {
		isp.NetNS = in.env.Lab.HostNS(r.Host)
	}
	if mode := r.Provision.Plug; mode != "" {
		isp.Plug = func(ctx context.Context, link string) (platform.Plugged, error) {
			att, err := in.env.Lab.Plug(ctx, mode, r.Host, link)
			if err != nil {
				return platform.Plugged{}, err
			}
			in.mu.Lock()
			in.detach = append(in.detach, att.Detach)
			in.mu.Unlock()
			return platform.Plugged{IP: att.IP, Prefix: att.Prefix, Gateway: att.Gateway, MTU: att.MTU}, nil
		}
	}
	if r.Provision.Join {
		if *loopOwner == "" {
			*loopOwner = name
		} else {
			isp.ShareNetworkWith = *loopOwner
		}
	}
	p, ok := in.env.Platforms[r.Platform]
	if !ok {
		return nil, platformErr(fmt.Errorf("platform %s is not open", r.Platform))
	}
	inv.Counters = r.Counters
	oneAtATime := platform.EndOneAtATime(p)
	inv.Linger = in.linger && oneAtATime && inv.Kind == invocation.Run
	inv.WaitNet = r.Provision.Wire != "" && inv.Kind == invocation.Run
	inv.WaitRoute = isCluster && cluster.RoutesSettle() && inv.Target != "" && inv.Kind == invocation.Run
	inv.Key = result.NewKey()
	isp.Agent = inv
	isp.Labels = in.env.labels(platform.LabelTrial, strconv.Itoa(in.seq), platform.LabelRole, r.Name)
	if err := in.env.Starts.acquire(ctx); err != nil {
		return nil, err
	}
	inst, err := p.Start(ctx, isp)
	in.env.Starts.release()
	if err != nil {
		return nil, platformErr(fmt.Errorf("starting %s on %s: %w", r.Name, r.Platform, err))
	}
	s := &started{watched: watch(r.Name, inst, inv.Key), role: r, ip: inst.IP()}
	in.mu.Lock()
	if oneAtATime {
		in.serial = append(in.serial, s.watched)
	} else {
		in.started = append(in.started, s.watched)
	}
	in.mu.Unlock()
	if w := r.Provision.Wire; w != "" {
		ns := inst.NetNSPath()
		if ns == "" {
			return nil, platformErr(fmt.Errorf("%s on %s: no network namespace to wire %s into", r.Name, r.Platform, w))
		}
		att, err := in.env.Lab.Attach(ctx, w, r.Host, ns)
		if err != nil {
			return nil, platformErr(fmt.Errorf("wiring %s into %s: %w", r.Name, w, err))
		}
		in.mu.Lock()
		in.detach = append(in.detach, att.Detach)
		in.mu.Unlock()
		if wd, ok := inst.(platform.Wired); ok {
			if err := wd.Wired(att.IP); err != nil {
				return nil, platformErr(fmt.Errorf("%s on %s, wired into %s: %w", r.Name, r.Platform, w, err))
			}
		}
		if s.ip == "" { // else an address of its own inside (a nested child on its parent's bridge)
			s.ip = att.IP
		}
	}
	return s, nil
}

// cleanup removes every instance and then what the lab made for them. It
// stops waiting when the campaign aborts (Env.Abort: a platform stopped
// answering), saying in out what was left; the removals under way go on
// in the background, each within its platform's own bound.
func (in *instances) cleanup(ctx context.Context, out *Outcome) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.remove(ctx)
	}()
	var abort <-chan struct{}
	if in.env.Abort != nil {
		abort = in.env.Abort.Done()
	}
	select {
	case <-done:
	case <-abort:
		out.Removal = fmt.Sprintf("did not finish: %v", context.Cause(in.env.Abort))
		out.see("", map[string]string{SeenRemoval: out.Removal})
	}
}

// remove removes every instance and then what the lab made for them.
func (in *instances) remove(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.env.CleanupTimeout)
	defer cancel()
	in.mu.Lock()
	defer in.mu.Unlock()
	var wg sync.WaitGroup
	var fmu sync.Mutex
	var failed []platform.Instance
	for _, r := range in.started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.inst.Remove(cctx) != nil {
				fmu.Lock()
				failed = append(failed, r.inst)
				fmu.Unlock()
			}
		}()
	}
	for _, r := range in.serial {
		if r.inst.Remove(cctx) != nil {
			failed = append(failed, r.inst)
		}
	}
	wg.Wait()
	// An instance that shares another's namespace depends on it: an
	// engine may refuse to remove the other while it exists (podman:
	// "has dependent containers"). Once the rest are gone, once more.
	for _, i := range failed {
		_ = i.Remove(cctx)
	}
	for _, d := range in.detach {
		_ = d()
	}
}
