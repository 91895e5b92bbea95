package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

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
	// probe is where the next role connects until that server's front (a
	// Kubernetes Service) carries a connection; "" when it has none.
	probe string
	owner string // the instance whose namespace loopback roles join
}

// chainTrial is one chain trial under way: its cell, where it runs, what it
// started, and the parameters its roles run with — what naming its
// instances and writing its agents' invocations need.
type chainTrial struct {
	env    *Env
	t      Trial
	c      *plan.Cell
	in     *instances
	params string
}

// Run implements TrialRunner. The instances it started are removed, and
// the delay lines' work seen, when it returns, whatever it returns.
func (Chain) Run(ctx context.Context, env *Env, t Trial) (out Outcome, err error) {
	c := t.Cell
	in := &instances{env: env, seq: t.Seq, linger: true}
	defer in.cleanup(ctx, &out)
	if c.Hosts > 1 && env.Lab != nil {
		seeDelay, err := setUnderlay(env.Lab, c)
		if err != nil {
			return out, err
		}
		if seeDelay != nil {
			defer seeDelay(&out)
		}
	}
	if err := shapeCluster(env, c); err != nil {
		return out, err
	}
	// {trial} and {cell.<factor>} in the parameters that take them.
	params, err := c.Workload.Bind(c.Params, workload.PlaceholderVars(t.Seq, c.Factors))
	if err != nil {
		return out, err
	}
	ct := &chainTrial{env: env, t: t, c: c, in: in, params: params}

	var loops []*watched
	if c.Neighbours.Separate {
		if loops, err = startNeighbours(ctx, env, in, c, ct.name); err != nil {
			return out, err
		}
	}
	pairs, err := ct.startPairs(ctx)
	if err != nil {
		return out, err
	}
	beside, err := ct.runDrivers(ctx, pairs)
	if err != nil {
		return out, err
	}
	return collect(ctx, c, pairs, append(loops, beside...), &out)
}

// name is the name of the trial's instance of role.
func (ct *chainTrial) name(role string) string {
	return fmt.Sprintf("ctrbench-%s-%s-%s-%s", ct.env.CampaignID, ct.t.tag(), role, ct.env.Token)
}

// pairName is the name of pair p's instance of role: numbered when the
// trial has several pairs.
func (ct *chainTrial) pairName(role string, p int) string {
	if ct.c.Pairs > 1 {
		role = fmt.Sprintf("%s%d", role, p+1)
	}
	return ct.name(role)
}

// agent is the invocation of role's agent in pair pr: the workload with
// the trial's parameters, against the server pr started last.
func (ct *chainTrial) agent(role string, pr *pair) invocation.Agent {
	c := ct.c
	return invocation.Agent{Kind: invocation.Run, Workload: c.WorkloadType, Role: role, Params: ct.params, Target: pr.target, Ports: pr.ports, WaitConnect: pr.probe}
}

// driverAgent is the invocation of pair p's driver, which runs the
// neighbours too unless they run apart.
func (ct *chainTrial) driverAgent(pairs []*pair, p int) invocation.Agent {
	inv := ct.agent(ct.c.Driver().Name, pairs[p])
	if !ct.c.Neighbours.Apart() {
		inv.Neighbours = ct.c.Neighbours.Specs
	}
	return inv
}

// runDrivers runs the drivers, each pair's server ready. One pair's client
// runs as soon as it starts (unless wired around, or with neighbours beside
// it: below); several pairs' clients are all started, connected to nothing
// yet and ready, then all given the go signal at once, however long their
// hosting entities took to start, so their measured runs overlap. It
// returns the neighbours that ran beside the driver, in its pod.
func (ct *chainTrial) runDrivers(ctx context.Context, pairs []*pair) ([]*watched, error) {
	c, in := ct.c, ct.in
	if c.Neighbours.Beside {
		return ct.runBeside(ctx, pairs)
	}
	drv := c.Driver()
	driverAgent := func(p int) invocation.Agent { return ct.driverAgent(pairs, p) }
	// A driver with an address of its own inside a namespace the lab
	// wires after it starts (a nested child on the bridge of a parent on
	// Open vSwitch) could run before its parent has a way out: it too
	// waits for the go signal, given once it is wired.
	wiredAround := drv.Provision.Wire != "" && drv.Provision.Platform != vocab.None
	if c.Instances || c.Pairs > 1 || wiredAround {
		return nil, runCopies(ctx, in, c, pairs, func(p int) string { return ct.pairName(drv.Name, p) }, driverAgent)
	}
	pr := pairs[0]
	d, err := in.start(ctx, c.Pinned(drv, 0, len(c.Chain)-1), ct.pairName(drv.Name, 0), driverAgent(0), &pr.owner)
	if err != nil {
		return nil, err
	}
	pr.driver = d
	pr.res, err = d.await(ctx)
	return nil, err
}

// runBeside runs the one pair's driver with the neighbours in containers
// beside it, in its pod (packaging same-pod): the pod's containers start
// together, so the driver waits, ready, until every neighbour is, and
// then gets the go signal — the neighbours load the whole of its measured
// run, as they do when they start first in instances of their own.
func (ct *chainTrial) runBeside(ctx context.Context, pairs []*pair) ([]*watched, error) {
	c, pr := ct.c, pairs[0]
	drv := c.Driver()
	nbs := c.Neighbours
	containers := make([]platform.Container, len(nbs.Specs))
	for i, sp := range nbs.Specs {
		typ, params := neighbour.Parse(sp)
		containers[i] = platform.Container{Name: fmt.Sprintf("neighbour%d", i+1), Limits: nbs.Role.Limits,
			Agent: invocation.Agent{Kind: invocation.Loop, Workload: typ, Params: params, Counters: nbs.Role.Counters, Key: result.NewKey()}}
		if i < len(nbs.Images) {
			containers[i].Image = nbs.Images[i]
		}
	}
	inv := ct.driverAgent(pairs, 0)
	inv.WaitGo = true
	d, err := ct.in.startWith(ctx, c.Pinned(drv, 0, len(c.Chain)-1), ct.pairName(drv.Name, 0), inv, &pr.owner, platform.InstanceSpec{Beside: containers})
	if err != nil {
		return nil, err
	}
	pr.driver = d
	pod, ok := d.inst.(platform.Pod)
	if !ok || len(pod.Beside()) != len(containers) {
		return nil, platformErr(fmt.Errorf("%s on %s did not start the neighbours beside it", drv.Name, drv.Platform))
	}
	var loops []*watched
	for i, b := range pod.Beside() {
		w := watch(containers[i].Name, b, containers[i].Agent.Key)
		loops = append(loops, w)
		if _, err := w.awaitReady(ctx); err != nil {
			return loops, fmt.Errorf("neighbour %s: %w", containers[i].Agent.Workload, err)
		}
	}
	if _, err := d.awaitReady(ctx); err != nil {
		return loops, err
	}
	g, err := goer(d, drv.Name)
	if err != nil {
		return loops, err
	}
	if err := g.Go(ctx); err != nil {
		return loops, platformErr(err)
	}
	pr.res, err = d.await(ctx)
	return loops, err
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
		g, err := goer(pr.driver, fmt.Sprintf("%s %d", copiesOf(c).noun, p+1))
		if err != nil {
			return err
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

// goer is s as an instance its agent's go signal can be given, named what
// in the platform's failure when it cannot.
func goer(s *started, what string) (platform.Goer, error) {
	g, ok := s.inst.(platform.Goer)
	if !ok {
		return nil, platformErr(fmt.Errorf("%s on %s cannot be given the go signal", what, s.role.Platform))
	}
	return g, nil
}

// firstPairErr is the error of the first copy that failed, saying which
// copy when there are several; nil when none did.
func firstPairErr(cp copies, errs []error) error {
	for p, err := range errs {
		if err != nil {
			return pairErr(cp, len(errs), p, err)
		}
	}
	return nil
}

// pairErr is err of copy p, saying which copy when there are several.
func pairErr(cp copies, npairs, p int, err error) error {
	if npairs == 1 {
		return err
	}
	return fmt.Errorf("%s %d of %d: %w", cp.noun, p+1, npairs, err)
}
