package runner

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/delayline"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// serverGrace is how long a server may take to finish after its client.
const serverGrace = 15 * time.Second

// Chain runs a workload's chain of roles: every role but the last is a
// server, started and ready before the next, which is its client; the last
// drives the load and is the one measured. tcp_stream is server <- client;
// S2's ping-pong is pong <- ping <- client. Pairs (several chains at once)
// start their servers concurrently and their drivers at one agreed instant.
// Neighbours run in the driver's instance or, each in its own, from before
// the first server until after the driver.
type Chain struct{}

// pair is one client/server chain of a trial.
type pair struct {
	servers []*started
	driver  *started
	res     *result.Result
	// serverRes are the servers' results, as servers, once collected.
	serverRes []*result.Result
	target    string // address of the last server started, for the next role
	// ports are where that server's engine published its other ports
	// (a published network), for the next role.
	ports map[string]string
	owner string // the instance whose namespace loopback roles join
}

// Run implements TrialRunner.
func (Chain) Run(ctx context.Context, env *Env, t Trial) (out Outcome, err error) {
	c := t.Cell
	in := &instances{env: env, seq: t.Seq, linger: true}
	defer in.cleanup(ctx, &out)
	if c.Hosts > 1 && env.Lab != nil {
		if err := env.Lab.SetUnderlay(c.Underlay); err != nil {
			return out, platformErr(err)
		}
		if before, ok := env.Lab.DelayLines(); ok {
			defer func() { seeDelayLines(env.Lab, before, &out) }()
		}
	}
	if cluster, ok := platform.ClusterOf(c.Driver().Driver.Caps); ok {
		if err := cluster.Shape(env.Platforms[c.Driver().Platform], c.Underlay.Rate); err != nil {
			return out, platformErr(err)
		}
	}
	nameOf := func(role string) string {
		return fmt.Sprintf("ctrbench-%s-%s-%s-%s", env.CampaignID, t.tag(), role, env.Token)
	}
	pairName := func(role string, p int) string {
		if c.Pairs > 1 {
			role = fmt.Sprintf("%s%d", role, p+1)
		}
		return nameOf(role)
	}
	// {trial} and {cell.<factor>} in the parameters that take them.
	params, err := c.Workload.Bind(c.Params, workload.PlaceholderVars(t.Seq, c.Factors))
	if err != nil {
		return out, err
	}
	agent := func(role string, pr *pair) invocation.Agent {
		return invocation.Agent{Kind: invocation.Run, Workload: c.WorkloadType, Role: role, Params: params, Target: pr.target, Ports: pr.ports}
	}

	var loops []*watched
	if c.Neighbours.Separate {
		var err error
		if loops, err = startNeighbours(ctx, env, in, c, nameOf); err != nil {
			return out, err
		}
	}

	pairs := make([]*pair, c.Pairs)
	errs := make([]error, c.Pairs)
	var wg sync.WaitGroup
	for p := range pairs {
		pairs[p] = &pair{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = startServers(ctx, env, in, t, p, pairs[p], func(role string) string { return pairName(role, p) }, agent)
		}()
	}
	wg.Wait()
	if err := firstPairErr(copiesOf(c), errs); err != nil {
		return out, err
	}

	// The drivers. One pair's client runs as soon as it starts (unless
	// wired around, below); several
	// pairs' clients are all started, connected to nothing yet and ready,
	// then all given the go signal at once, however long their hosting
	// entities took to start, so their measured runs overlap.
	drv := c.Driver()
	driverAgent := func(p int) invocation.Agent {
		inv := agent(drv.Name, pairs[p])
		if !c.Neighbours.Separate {
			inv.Neighbours = c.Neighbours.Specs
		}
		return inv
	}
	// A driver with an address of its own inside a namespace the lab
	// wires after it starts (a nested child on the bridge of a parent on
	// Open vSwitch) could run before its parent has a way out: it too
	// waits for the go signal, given once it is wired.
	wiredAround := drv.Provision.Wire != "" && drv.Provision.Platform != vocab.None
	if c.Instances || c.Pairs > 1 || wiredAround {
		if err := runCopies(ctx, in, c, pairs, func(p int) string { return pairName(drv.Name, p) }, driverAgent); err != nil {
			return out, err
		}
		return collect(ctx, c, pairs, loops, &out)
	}
	pr := pairs[0]
	d, err := in.start(ctx, c.Pinned(drv, 0, len(c.Chain)-1), pairName(drv.Name, 0), driverAgent(0), &pr.owner)
	if err != nil {
		return out, err
	}
	pr.driver = d
	if pr.res, err = d.await(ctx); err != nil {
		return out, err
	}
	return collect(ctx, c, pairs, loops, &out)
}

// Seen keys of what the underlay's delay lines did during a trial.
const (
	SeenDelayLineCPU      = "underlay.delay_line.cpu_seconds"
	SeenDelayLineFrames   = "underlay.delay_line.frames"
	SeenDelayLineLost     = "underlay.delay_line.lost"
	SeenDelayLineOverflow = "underlay.delay_line.overflow"
	SeenDelayLineLate     = "underlay.delay_line.late_us"
)

// seeDelayLines records what the lab's delay lines did since before: the
// frames they delayed, lost on purpose and dropped when full, how late a
// held frame left them on average (their own error, apart from how late
// the machine then wakes the workload), and their threads' CPU time (the
// price of emulating delay in userspace).
func seeDelayLines(lab *netlab.Lab, before delayline.Stats, out *Outcome) {
	now, _ := lab.DelayLines()
	late := "0"
	if held := now.Held - before.Held; held > 0 {
		late = strconv.FormatFloat(float64(now.LateNs-before.LateNs)/float64(held)/1e3, 'f', 1, 64)
	}
	out.see("", map[string]string{
		SeenDelayLineLate:     late,
		SeenDelayLineCPU:      strconv.FormatFloat(now.CPU-before.CPU, 'f', 2, 64),
		SeenDelayLineFrames:   strconv.FormatUint(now.Frames-before.Frames, 10),
		SeenDelayLineLost:     strconv.FormatUint(now.Lost-before.Lost, 10),
		SeenDelayLineOverflow: strconv.FormatUint(now.Overflow-before.Overflow, 10),
	})
}

// runCopies runs the drivers of several copies — the copies of a
// single-role workload (instances) or the clients of several pairs, whose
// servers are ready: all are started and report ready, then all get the go
// signal at once and run their measured windows together, however long
// their hosting entities took to start (a nested parent takes seconds, 100
// containers tens of seconds).
func runCopies(ctx context.Context, in *instances, c *plan.Cell, copies []*pair, name func(int) string, agent func(p int) invocation.Agent) error {
	drv := c.Driver()
	errs := make([]error, len(copies))
	var wg sync.WaitGroup
	for p, pr := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv := agent(p)
			inv.WaitGo = true
			d, err := in.start(ctx, c.Pinned(drv, p, len(c.Chain)-1), name(p), inv, &pr.owner)
			if err != nil {
				errs[p] = err
				return
			}
			pr.driver = d
			_, errs[p] = d.awaitReady(ctx)
		}()
	}
	wg.Wait()
	if err := firstPairErr(copiesOf(c), errs); err != nil {
		return err
	}
	for p, pr := range copies {
		g, ok := pr.driver.inst.(platform.Goer)
		if !ok {
			return platformErr(fmt.Errorf("%s %d on %s cannot be given the go signal", copiesOf(c).noun, p+1, drv.Platform))
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[p] = g.Go(ctx) }()
	}
	wg.Wait()
	if err := firstPairErr(copiesOf(c), errs); err != nil {
		return platformErr(err)
	}
	for p, pr := range copies {
		wg.Add(1)
		go func() { defer wg.Done(); pr.res, errs[p] = pr.driver.await(ctx) }()
	}
	wg.Wait()
	return firstPairErr(copiesOf(c), errs)
}

// startServers starts the servers of one pair in chain order, each ready
// before its client's address is worked out.
func startServers(ctx context.Context, env *Env, in *instances, t Trial, p int, pr *pair, name func(string) string, agent func(role string, pr *pair) invocation.Agent) error {
	c := t.Cell
	for i, srv := range c.Chain[:len(c.Chain)-1] {
		link := c.Links[i]
		bind, err := env.resolve(link.Bind, "")
		if err != nil {
			return fmt.Errorf("where the %s listens: %w", srv.Name, err)
		}
		inv := agent(srv.Name, pr)
		inv.Bind = bind
		var publish []vocab.Port
		if link.Target.Kind == plan.Published {
			inv.Port, publish = plan.PublishedPort, c.Publish
		}
		s, err := in.start(ctx, c.Pinned(srv, p, i), name(srv.Name), inv, &pr.owner, publish...)
		if err != nil {
			return err
		}
		pr.servers = append(pr.servers, s)
		addr, err := s.awaitReady(ctx)
		if err != nil {
			return err
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("%s announced a bad address %q: %w", srv.Name, addr, err)
		}
		pr.ports = nil
		if link.Target.Kind == plan.Published {
			if link.Target.Host > 0 { // the lab publishes it on its emulated host
				pr.target, pr.ports, err = in.publishOnHost(srv, link.Target.Host, s.ip, port, c.Publish)
			} else {
				pr.target, pr.ports, err = published(s.inst, srv, port, c.Publish)
			}
			if err != nil {
				return err
			}
			continue
		}
		host, err := env.resolve(link.Target, s.ip)
		if err != nil {
			return fmt.Errorf("the %s's address on network %s: %w", srv.Name, srv.Network, err)
		}
		pr.target = net.JoinHostPort(host, port)
	}
	return nil
}

// published is where a client reaches a server whose ports its engine
// published: the machine's address and port the engine chose for the port
// the server announced, and where it published each of the server's more
// ports.
func published(inst platform.Instance, srv plan.Role, port string, more []vocab.Port) (string, map[string]string, error) {
	p, ok := inst.(platform.Publisher)
	if !ok || p.Published() == "" {
		return "", nil, fmt.Errorf("the %s's platform %s published no port for it on network %s", srv.Name, srv.Platform, srv.Network)
	}
	if port != strconv.Itoa(plan.PublishedPort) {
		return "", nil, fmt.Errorf("the %s listens on port %s, not on %d, the port its engine published", srv.Name, port, plan.PublishedPort)
	}
	ports, err := morePublished(p.PublishedPorts(), more)
	if err != nil {
		return "", nil, fmt.Errorf("the %s's platform %s %w", srv.Name, srv.Platform, err)
	}
	return p.Published(), ports, nil
}

// morePublished are where the server's more ports were published, of all
// that were ("PORT/PROTO" → "HOST:PORT"); nil when it has none more.
func morePublished(all map[string]string, more []vocab.Port) (map[string]string, error) {
	var ports map[string]string
	for _, m := range more {
		a, ok := all[m.String()]
		if !ok {
			return nil, fmt.Errorf("did not publish its port %s", m)
		}
		if ports == nil {
			ports = map[string]string{}
		}
		ports[m.String()] = a
	}
	return ports, nil
}

// publishOnHost publishes, on emulated host's underlay address, the port
// the server announced and its more ports (the lab's NAT, as Docker's
// -p), until the trial ends, and says where, as published does.
func (in *instances) publishOnHost(srv plan.Role, host int, ip, port string, more []vocab.Port) (string, map[string]string, error) {
	n, err := strconv.Atoi(port)
	if err != nil || ip == "" {
		return "", nil, fmt.Errorf("the %s announced port %q at address %q: nothing to publish", srv.Name, port, ip)
	}
	control := vocab.Port{Number: n, Proto: "tcp"}
	all, unpublish, err := in.env.Lab.Publish(host, ip, append([]vocab.Port{control}, more...))
	if err != nil {
		return "", nil, platformErr(err)
	}
	in.mu.Lock()
	in.detach = append(in.detach, unpublish)
	in.mu.Unlock()
	ports, err := morePublished(all, more)
	if err != nil {
		return "", nil, platformErr(fmt.Errorf("the lab %w", err))
	}
	return all[control.String()], ports, nil
}

// collect gathers the results of every role of every pair: the driver's,
// then each server's (the last client's server first), and the
// neighbours' when they ran apart.
func collect(ctx context.Context, c *plan.Cell, pairs []*pair, loops []*watched, out *Outcome) (Outcome, error) {
	npairs := c.Pairs
	cres := pairs[0].res
	if len(loops) > 0 && cres.Status == result.OK {
		if err := stopNeighbours(ctx, loops, cres); err != nil {
			return *out, err
		}
	}
	out.Flags = cres.Seen[neighbour.FlagKey]
	out.see("", cres.Seen)
	if s, ok := pairs[0].driver.inst.(platform.Seer); ok {
		out.see("platform.", s.Seen())
	}
	perPair := make([][]result.Observation, npairs)
	hists := make([][]result.Histogram, npairs)
	for p, pr := range pairs {
		obs, raw, err := observations(pr.res)
		if err != nil {
			// Servers may wait for a client that never came; they are
			// removed with the trial rather than waited for. One that
			// failed first is the cause, the client's error its symptom.
			if srv, sres := failedServer(ctx, pr); sres != nil {
				err = fmt.Errorf("the %s failed: %s (then the %s: %w)", srv, sres.Error, pr.driver.role.Name, err)
				raw = strings.TrimSpace(sres.Raw + "\n" + raw)
			}
			out.Raw = raw
			return *out, pairErr(copiesOf(c), npairs, p, err)
		}
		perPair[p] = obs
		hists[p] = pr.res.Histograms
		if p == 0 {
			out.Raw = raw // an ok run's output, where its workload keeps it
		}
	}
	// Servers finish once their client is done.
	gctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	for p, pr := range pairs {
		for i := len(pr.servers) - 1; i >= 0; i-- {
			srv := pr.servers[i]
			sres, err := srv.await(gctx)
			if err != nil {
				return *out, pairErr(copiesOf(c), npairs, p, fmt.Errorf("the %s finished but the %s did not: %w", pr.driver.role.Name, srv.role.Name, err))
			}
			if pr.serverRes == nil {
				pr.serverRes = make([]*result.Result, len(pr.servers))
			}
			pr.serverRes[i] = sres
			if p == 0 {
				out.see(srv.role.Name+".", sres.Seen)
				if s, ok := srv.inst.(platform.Seer); ok {
					out.see(srv.role.Name+".platform.", s.Seen())
				}
			}
			sobs, raw, err := observations(sres)
			if err != nil {
				out.Raw = raw
				return *out, pairErr(copiesOf(c), npairs, p, fmt.Errorf("%s: %w", srv.role.Name, err))
			}
			for _, ob := range sobs {
				ob.Role = srv.role.Name
				perPair[p] = append(perPair[p], ob)
			}
			for _, h := range sres.Histograms {
				h.Role = srv.role.Name
				hists[p] = append(hists[p], h)
			}
		}
	}
	windows := make([]result.Window, npairs)
	for p, pr := range pairs {
		windows[p] = result.Window{Start: pr.res.Started, End: pr.res.Ended}
	}
	first, last := span(windows)
	out.see("", map[string]string{
		SeenRunStarted: first.UTC().Format(time.RFC3339Nano),
		SeenRunEnded:   last.UTC().Format(time.RFC3339Nano),
	})
	if err := recordPlacement(c, pairs, out); err != nil {
		return *out, err
	}
	if npairs == 1 {
		out.Observations, out.Histograms = perPair[0], hists[0]
		return *out, nil
	}
	var err error
	cp := copiesOf(c)
	if out.Observations, out.Histograms, err = aggregatePairs(c.Workload.For(c.Cell.Params), cp, perPair, hists, windows); err != nil {
		return *out, err
	}
	for _, ob := range out.Observations {
		if ob.Metric == overlapMetric && ob.Kind == cp.kind && ob.Value < minPairsOverlap {
			out.Flags = fmt.Sprintf("the %d %ss ran together for only %.0f%% of their mean window (want %.0f%%): some started late or ended early", npairs, cp.noun, ob.Value, minPairsOverlap)
		}
	}
	return *out, nil
}

func firstPairErr(cp copies, errs []error) error {
	for p, err := range errs {
		if err != nil {
			return pairErr(cp, len(errs), p, err)
		}
	}
	return nil
}

func pairErr(cp copies, npairs, p int, err error) error {
	if npairs == 1 {
		return err
	}
	return fmt.Errorf("%s %d of %d: %w", cp.noun, p+1, npairs, err)
}

// The measured window of a chain trial, across all its pairs: the first
// driver's start and the last one's end (RFC 3339, UTC). With the trial's
// own start and end they split its time into set-up, run and tear-down.
const (
	SeenRunStarted = "run.started"
	SeenRunEnded   = "run.ended"
)

// recordPlacement records how the trial sat on the machine — its hosting
// entities per core (S4's container-to-core ratio) and, with pinning, the
// core each instance was given and the CPUs its agent really ran on — and
// fails the trial when an agent ran elsewhere than pinning placed it.
func recordPlacement(c *plan.Cell, pairs []*pair, out *Outcome) error {
	// The cores the trial had: the CPUs it may use, or the emulated
	// machine's quota where that is less (S4's core count).
	cores := float64(len(c.CPUs))
	if c.MachineCPUs > 0 && c.MachineCPUs < cores {
		cores = c.MachineCPUs
	}
	entities := 0
	for _, pr := range pairs {
		entities += len(pr.servers)
		if pr.driver != nil {
			entities++
		}
	}
	if c.Neighbours.Separate {
		entities += len(c.Neighbours.Specs)
	}
	out.see("placement.", map[string]string{
		"entities":          strconv.Itoa(entities),
		"cores":             strconv.FormatFloat(cores, 'f', -1, 64),
		"entities_per_core": strconv.FormatFloat(float64(entities)/cores, 'f', 3, 64),
		"pinning":           string(c.Pinning),
	})
	if c.Pinning == vocab.PinNone {
		return nil
	}
	copyName := func(p int) string {
		if c.Instances {
			return fmt.Sprintf("instance%d", p+1)
		}
		return fmt.Sprintf("pair%d", p+1)
	}
	var wrong []string
	check := func(p int, s *started, res *result.Result) {
		key := "placement." + copyName(p) + "." + s.role.Name
		want, got := s.role.Limits.Cpuset, ""
		if res != nil {
			got = res.Seen["cpu.affinity"]
		}
		out.see("", map[string]string{key + ".pinned": want, key + ".ran_on": got})
		if got != want {
			wrong = append(wrong, fmt.Sprintf("%s %s pinned to %s ran on %q", copyName(p), s.role.Name, want, got))
		}
	}
	for p, pr := range pairs {
		if pr.driver != nil {
			check(p, pr.driver, pr.res)
		}
		for i, srv := range pr.servers {
			var res *result.Result
			if i < len(pr.serverRes) {
				res = pr.serverRes[i]
			}
			check(p, srv, res)
		}
	}
	if len(wrong) > 0 {
		return platformErr(fmt.Errorf("pinning %s was not applied: %s", c.Pinning, strings.Join(wrong, "; ")))
	}
	return nil
}

// failedServer is a server of the pair that ended failed, and its result;
// "" and nil when none did within a moment (healthy servers wait for
// their client's "done").
func failedServer(ctx context.Context, pr *pair) (string, *result.Result) {
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, srv := range pr.servers {
		res, err := srv.await(wctx)
		switch {
		case err != nil && wctx.Err() == nil:
			return srv.role.Name, &result.Result{Status: result.Failed, Error: err.Error()}
		case err == nil && res.Status != result.OK:
			return srv.role.Name, res
		}
	}
	return "", nil
}
