package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// placed is where a role of a cell runs: its placement and its emulated
// host (0 = the machine itself).
type placed struct {
	role string
	pl   spec.Placement
	host int
}

// place resolves role's placement in cell; chain is the workload's roles
// (servers first, driver last), along which roles spread over hosts.
func place(cell result.Cell, role string, chain []string) placed {
	at := placed{role: role, pl: spec.PlacementFor(cell.Factors, role)}
	if spec.Hosts(cell.Factors) > 1 {
		at.host = spec.HostOf(cell.Factors, role, chain)
	}
	return at
}

// rootNS reports whether the role shares the machine's own network
// namespace: a host process on the machine, or a container on its network.
func (p placed) rootNS() bool {
	return p.pl.Platform == "native" && p.host == 0 || p.pl.Platform != "native" && p.pl.Network == spec.NetHost
}

// agentRef is a started agent and where it sits on the network.
type agentRef struct {
	*running
	placed
	ip string // its own address ("" in the host's namespace)
}

// trialRun holds what one trial started, for cleanup.
type trialRun struct {
	o    *Options
	cell result.Cell
	pt   spec.PlannedTrial

	mu      sync.Mutex
	started []*running
	detach  []func() error
}

// platformNet maps a placement to the network the platform provides
// itself; "" when ctrbench wires the namespace (netlab).
func platformNet(pl spec.Placement, hosts int) (network, wired string) {
	if pl.Platform == "native" {
		return platform.NetHost, ""
	}
	switch pl.Network {
	case spec.NetHost, spec.NetBridgeDefault:
		return pl.Network, ""
	case spec.NetBridge:
		if hosts > 1 {
			return platform.NetNone, spec.NetBridge
		}
		return platform.NetBridge, ""
	case spec.NetLoopback:
		return platform.NetNone, ""
	default: // macvlan, ovs, overlay, overlay-encrypted
		return platform.NetNone, pl.Network
	}
}

// start launches one agent placed as its role says: on its emulated host,
// in its network (wired by netlab after it starts, or joining the first
// instance of its pair for loopback).
func (tr *trialRun) start(ctx context.Context, at placed, name string, args []string, loopOwner *string) (*agentRef, error) {
	o, role, pl := tr.o, at.role, at.pl
	ref := &agentRef{placed: at}
	network, wired := platformNet(pl, spec.Hosts(tr.cell.Factors))
	isp := platform.InstanceSpec{Name: name, Network: network, Storage: pl.Storage}
	if pl.Platform == "native" && ref.host > 0 {
		isp.NetNS = o.lab.HostNS(ref.host)
	}
	if pl.Platform != "native" && pl.Network == spec.NetLoopback {
		if *loopOwner == "" {
			*loopOwner = name
		} else {
			isp.ShareNetworkWith = *loopOwner
		}
	}
	// Which counters are the instance's own: a container has its own
	// cgroup (and, off the host network, its own network namespace); a
	// native agent has its own cgroup only under limits.
	var scopes []string
	if pl.Platform != "native" {
		scopes = append(scopes, "cgroup")
		if pl.Network != spec.NetHost {
			scopes = append(scopes, "netns")
		}
	}
	if len(scopes) > 0 {
		args = append(args, "--telemetry", strings.Join(scopes, ","))
	}
	if wired != "" {
		args = append(args, "--wait-net")
	}
	isp.Args = args
	isp.Labels = o.labels()
	isp.Labels["io.ctrbench.trial"] = strconv.Itoa(tr.pt.Seq)
	isp.Labels["io.ctrbench.role"] = role
	lim, err := limitsOf(pl)
	if err != nil {
		return nil, err
	}
	isp.Limits = lim
	inst, err := o.Platforms[pl.Platform].Start(ctx, isp)
	if err != nil {
		return nil, fmt.Errorf("starting %s on %s: %w", role, pl.Platform, err)
	}
	ref.running = watch(role, inst)
	tr.mu.Lock()
	tr.started = append(tr.started, ref.running)
	tr.mu.Unlock()
	ref.ip = inst.IP()
	if wired != "" {
		nser, ok := inst.(platform.NetNSer)
		if !ok || nser.NetNSPath() == "" {
			return nil, fmt.Errorf("%s on %s: no network namespace to wire %s into", role, pl.Platform, wired)
		}
		att, err := o.lab.Attach(ctx, wired, ref.host, nser.NetNSPath())
		if err != nil {
			return nil, fmt.Errorf("wiring %s into %s: %w", role, wired, err)
		}
		tr.mu.Lock()
		tr.detach = append(tr.detach, att.Detach)
		tr.mu.Unlock()
		ref.ip = att.IP
	}
	return ref, nil
}

// cleanup removes every instance and then what netlab made for them.
func (tr *trialRun) cleanup(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tr.o.CleanupTimeout)
	defer cancel()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range tr.started {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.inst.Remove(cctx) }()
	}
	wg.Wait()
	for _, d := range tr.detach {
		_ = d()
	}
}

// serverAddrs works out where a server listens and the address its
// client connects to; target "" means the server's own address, known once
// it runs. Never 0.0.0.0 in the machine's own namespace, which would listen
// on the real interface: there the server binds loopback, or the host-side
// address of the network its client sits on.
func (o *Options) serverAddrs(srv, cli placed) (bind, target string, err error) {
	switch {
	case srv.rootNS():
		if cli.rootNS() {
			return "127.0.0.1", "127.0.0.1", nil
		}
		addr := o.hostSide(cli.pl, 0)
		if addr == "" {
			return "", "", fmt.Errorf("no host-side address on network %s for the %s", cli.pl.Network, srv.role)
		}
		return addr, addr, nil
	case srv.pl.Platform == "native": // on an emulated host: a namespace of ctrbench's own
		if cli.pl.Platform == "native" && cli.host == srv.host {
			return "0.0.0.0", "127.0.0.1", nil
		}
		addr := o.hostSide(cli.pl, srv.host)
		if addr == "" {
			return "", "", fmt.Errorf("emulated host %d has no address on network %s", srv.host, cli.pl.Network)
		}
		return "0.0.0.0", addr, nil
	case srv.pl.Network == spec.NetLoopback:
		return "127.0.0.1", "127.0.0.1", nil
	}
	return "0.0.0.0", "", nil
}

// hostSide is the address a host (0 = the machine, ≥1 = emulated) has on
// the network a client placed as cli uses.
func (o *Options) hostSide(cli spec.Placement, host int) string {
	network := cli.Network
	if cli.Platform == "native" {
		network = spec.NetHost
	}
	if host == 0 {
		switch network {
		case spec.NetBridge, spec.NetBridgeDefault:
			return o.Platforms[cli.Platform].HostAddr(network)
		case spec.NetMacvlan, spec.NetOVS:
			return o.lab.HostAddr(network, 0)
		}
		return ""
	}
	return o.lab.HostAddr(network, host)
}

// pairRun is one client/server chain of a trial.
type pairRun struct {
	servers []*agentRef
	driver  *agentRef
	res     *result.Result
}

func (o *Options) executeChain(ctx context.Context, cell result.Cell, pt spec.PlannedTrial, ex *extras) ([]result.Observation, string, error) {
	ws, ok := workload.Lookup(cell.WorkloadType)
	if !ok {
		return nil, "", fmt.Errorf("unknown workload type %q", cell.WorkloadType)
	}
	params, _ := json.Marshal(cell.Params)
	roles := ws.RoleList()
	tr := &trialRun{o: o, cell: cell, pt: pt}
	defer tr.cleanup(ctx)
	if spec.Hosts(cell.Factors) > 1 && o.lab != nil {
		if err := o.lab.SetUnderlayRate(cell.Factors[spec.FUnderlay]); err != nil {
			return nil, "", err
		}
	}
	npairs := spec.Pairs(cell.Factors)
	nameOf := func(role string, pair int) string {
		if npairs > 1 {
			role = fmt.Sprintf("%s%d", role, pair+1)
		}
		return fmt.Sprintf("ctrbench-%s-t%d-%s-%s", o.CampaignID, pt.Seq, role, o.runToken)
	}
	agentArgs := func(role, bind, target string, extra ...string) []string {
		args := []string{"agent", "run", "--workload", cell.WorkloadType, "--role", role, "--params", string(params)}
		args = append(args, extra...)
		if bind != "" {
			args = append(args, "--bind", bind)
		}
		if target != "" {
			args = append(args, "--target", target)
		}
		return args
	}

	// Neighbours (S0's antagonists): in the measured instance, or each in
	// an instance of its own, started and running before the target.
	neighbours := o.neighbours(cell)
	separate := len(neighbours) > 0 && cell.Factors[spec.FPackaging] == spec.PackSeparate
	var sameContainer []string
	var loops []*running
	for i, nb := range neighbours {
		if !separate {
			sameContainer = append(sameContainer, "--antagonist", nb)
			continue
		}
		typ, nparams := neighbour.Parse(nb)
		name := fmt.Sprintf("ctrbench-%s-t%d-antagonist%d-%s", o.CampaignID, pt.Seq, i+1, o.runToken)
		var none string
		at := place(cell, spec.RoleAntagonist, []string{spec.RoleAntagonist})
		r, err := tr.start(ctx, at, name, []string{"agent", "loop", "--workload", typ, "--params", nparams}, &none)
		if err != nil {
			return nil, "", err
		}
		if _, err := r.awaitReady(ctx); err != nil {
			return nil, "", fmt.Errorf("antagonist %s: %w", typ, err)
		}
		loops = append(loops, r.running)
	}

	// A chain of roles per pair: every role but the last is a server,
	// started and ready before the next, which is its client; the last
	// drives the load and is the one measured. tcp_stream is server <-
	// client; S2's ping-pong is pong <- ping <- client. Pairs start their
	// servers concurrently.
	pairs := make([]*pairRun, npairs)
	targets := make([]string, npairs)
	loopOwners := make([]string, npairs)
	errs := make([]error, npairs)
	var wg sync.WaitGroup
	serversFrom := time.Now()
	for p := range pairs {
		pairs[p] = &pairRun{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, role := range roles[:len(roles)-1] {
				srvAt, cliAt := place(cell, role, roles), place(cell, roles[i+1], roles)
				bind, host, err := o.serverAddrs(srvAt, cliAt)
				if err != nil {
					errs[p] = err
					return
				}
				srv, err := tr.start(ctx, srvAt, nameOf(role, p), agentArgs(role, bind, targets[p]), &loopOwners[p])
				if err != nil {
					errs[p] = err
					return
				}
				pairs[p].servers = append(pairs[p].servers, srv)
				addr, err := srv.awaitReady(ctx)
				if err != nil {
					errs[p] = err
					return
				}
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					errs[p] = fmt.Errorf("%s announced a bad address %q: %w", role, addr, err)
					return
				}
				if host == "" {
					if host = srv.ip; host == "" {
						errs[p] = fmt.Errorf("%s has no address on network %s", role, srvAt.pl.Network)
						return
					}
				}
				targets[p] = net.JoinHostPort(host, port)
			}
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			return nil, "", pairErr(npairs, p, err)
		}
	}

	// The drivers. Several pairs begin their measured runs together.
	driver := roles[len(roles)-1]
	var extra []string
	if npairs > 1 {
		// The clients take about as long to start as the servers did:
		// give them that, half again, and a second more.
		margin := max(2*time.Second, time.Second+time.Since(serversFrom)*3/2)
		at := time.Now().Add(margin)
		extra = append(extra, "--start-at", strconv.FormatInt(at.UnixNano(), 10))
	}
	extra = append(extra, sameContainer...)
	for p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := tr.start(ctx, place(cell, driver, roles), nameOf(driver, p), agentArgs(driver, "", targets[p], extra...), &loopOwners[p])
			if err != nil {
				errs[p] = err
				return
			}
			pairs[p].driver = d
			pairs[p].res, errs[p] = d.await(ctx)
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			return nil, "", pairErr(npairs, p, err)
		}
	}
	cres := pairs[0].res
	if separate && cres.Status == result.OK {
		if err := stopNeighbours(ctx, loops, cres); err != nil {
			return nil, "", err
		}
	}
	ex.flags = cres.Seen[neighbour.FlagKey]
	ex.see("", cres.Seen)
	perPair := make([][]result.Observation, npairs)
	for p, pr := range pairs {
		obs, raw, err := fromResult(pr.res)
		if err != nil {
			// Servers may wait for a client that never came; they are
			// removed with the trial rather than waited for.
			return nil, raw, pairErr(npairs, p, err)
		}
		perPair[p] = obs
	}
	// Servers finish once their client is done: the last client first.
	gctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	for p, pr := range pairs {
		for i := len(pr.servers) - 1; i >= 0; i-- {
			role := roles[i]
			sres, err := pr.servers[i].await(gctx)
			if err != nil {
				return nil, "", pairErr(npairs, p, fmt.Errorf("the %s finished but the %s did not: %w", driver, role, err))
			}
			if p == 0 {
				ex.see(role+".", sres.Seen)
			}
			sobs, sraw, err := fromResult(sres)
			if err != nil {
				return nil, sraw, pairErr(npairs, p, fmt.Errorf("%s: %w", role, err))
			}
			for _, ob := range sobs {
				ob.Metric = role + "." + ob.Metric
				perPair[p] = append(perPair[p], ob)
			}
		}
	}
	if npairs == 1 {
		return perPair[0], "", nil
	}
	windows := make([]result.Window, npairs)
	for p, pr := range pairs {
		windows[p] = result.Window{Start: pr.res.Started, End: pr.res.Ended}
	}
	obs := aggregatePairs(perPair, windows, ws)
	for _, ob := range obs {
		if ob.Metric == "pairs.overlap_pct" && ob.Value < minPairsOverlap {
			ex.flags = fmt.Sprintf("the %d pairs ran together for only %.0f%% of their mean window (want %.0f%%): some started late", npairs, ob.Value, minPairsOverlap)
		}
	}
	return obs, "", nil
}

// minPairsOverlap is the share of their window all pairs must run
// together; below it the trial is flagged.
const minPairsOverlap = 90.0

func pairErr(npairs, p int, err error) error {
	if npairs == 1 {
		return err
	}
	return fmt.Errorf("pair %d of %d: %w", p+1, npairs, err)
}

// isRate reports whether a unit is per second: pairs' values add up.
func isRate(unit string) bool { return strings.HasSuffix(unit, "/s") }

// aggregatePairs turns the pairs' observations into the trial's: each
// pair's as "pair<i>.<metric>", the aggregate under the metric's own name,
// and for the workload's
// headline metric Jain's fairness index and the max/min ratio across pairs
// (S4); "pairs.overlap_pct" is how much of the pairs' mean window all of
// them ran at once. The aggregate of a rate is the pairs' work over the
// whole span, Σ rate_i·duration_i / (last end − first start): the sum of
// the rates when the pairs ran together, less when they did not (never a
// sum of rates that were not simultaneous). Other metrics are averaged.
func aggregatePairs(perPair [][]result.Observation, windows []result.Window, ws *workload.Spec) []result.Observation {
	type agg struct {
		ob   result.Observation
		vals []float64
	}
	var order []string
	byMetric := map[string]*agg{}
	var out []result.Observation
	for p, obs := range perPair {
		for _, ob := range obs {
			a, ok := byMetric[ob.Metric]
			if !ok {
				a = &agg{ob: ob}
				byMetric[ob.Metric] = a
				order = append(order, ob.Metric)
			}
			a.vals = append(a.vals, ob.Value)
			pob := ob
			pob.Metric = fmt.Sprintf("pair%d.%s", p+1, ob.Metric)
			out = append(out, pob)
		}
	}
	var first, last time.Time
	for i, w := range windows {
		if i == 0 || w.Start.Before(first) {
			first = w.Start
		}
		if i == 0 || w.End.After(last) {
			last = w.End
		}
	}
	span := last.Sub(first).Seconds()
	var aggs []result.Observation
	for _, m := range order {
		a := byMetric[m]
		var sum, work float64
		for _, v := range a.vals {
			sum += v
		}
		ob := a.ob
		ob.Value = sum / float64(len(a.vals))
		if isRate(ob.Unit) && len(a.vals) == len(windows) && span > 0 {
			for p, v := range a.vals {
				work += v * windows[p].End.Sub(windows[p].Start).Seconds()
			}
			ob.Value = work / span
		}
		aggs = append(aggs, ob)
	}
	if len(ws.Metrics) > 0 {
		if a, ok := byMetric[ws.Metrics[0].Name]; ok && len(a.vals) == len(perPair) {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range a.vals {
				lo, hi = min(lo, v), max(hi, v)
			}
			aggs = append(aggs, result.Observation{Metric: "pairs.jain", Value: stats.JainFairness(a.vals), Unit: "index", Better: result.Higher})
			if lo > 0 {
				aggs = append(aggs, result.Observation{Metric: "pairs.max_min_ratio", Value: hi / lo, Unit: "ratio", Better: result.Lower})
			}
		}
	}
	var start, end time.Time
	var total time.Duration
	for i, w := range windows {
		if i == 0 || w.Start.After(start) {
			start = w.Start
		}
		if i == 0 || w.End.Before(end) {
			end = w.End
		}
		total += w.End.Sub(w.Start)
	}
	if mean := total / time.Duration(len(windows)); mean > 0 {
		common := max(end.Sub(start), 0)
		aggs = append(aggs, result.Observation{Metric: "pairs.overlap_pct", Value: 100 * float64(common) / float64(mean), Unit: "%", Better: result.Higher})
	}
	return append(aggs, out...)
}
