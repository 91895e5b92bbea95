package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// serverGrace is how long a server may take to finish after its client.
const serverGrace = 15 * time.Second

// collect gathers the results of every role of every pair: the driver's,
// then each server's (the last client's server first), and the
// neighbours' when they ran apart.
func collect(ctx context.Context, c *plan.Cell, pairs []*pair, loops []*watched, out *Outcome) (Outcome, error) {
	if err := seeDriver(ctx, pairs[0], loops, out); err != nil {
		return *out, err
	}
	col := &collection{c: c, pairs: pairs, out: out}
	if err := col.drivers(ctx); err != nil {
		return *out, err
	}
	// Servers finish once their client is done.
	gctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	if err := col.servers(gctx); err != nil {
		return *out, err
	}
	windows := seeRunWindow(pairs, out)
	if err := recordPlacement(c, pairs, out); err != nil {
		return *out, err
	}
	return col.combine(windows)
}

// seeDriver stops the neighbours that ran apart once the first pair's
// driver ran well, then records what that driver and its platform saw
// and the flags it raised.
func seeDriver(ctx context.Context, first *pair, loops []*watched, out *Outcome) error {
	cres := first.res
	if len(loops) > 0 && cres.Status == result.OK {
		if err := stopNeighbours(ctx, loops, cres); err != nil {
			return err
		}
	}
	out.Flags = cres.Seen[neighbour.FlagKey]
	out.see("", cres.Seen)
	if s, ok := first.driver.inst.(platform.Seer); ok {
		out.see("platform.", s.Seen())
	}
	return nil
}

// collection is what collect gathers of a trial's pairs into its outcome:
// each pair's observations and histograms, its driver's then its
// servers'.
type collection struct {
	c       *plan.Cell
	pairs   []*pair
	out     *Outcome
	perPair [][]result.Observation
	hists   [][]result.Histogram
}

// drivers takes each pair's driver's observations and histograms, and the
// first pair's output; a driver that failed fails the trial, with the
// failure of a server of its pair as the cause when one failed first.
func (col *collection) drivers(ctx context.Context) error {
	c, out, npairs := col.c, col.out, col.c.Pairs
	col.perPair = make([][]result.Observation, npairs)
	col.hists = make([][]result.Histogram, npairs)
	for p, pr := range col.pairs {
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
			return pairErr(copiesOf(c), npairs, p, err)
		}
		col.perPair[p] = obs
		col.hists[p] = pr.res.Histograms
		if p == 0 {
			out.Raw = raw // an ok run's output, where its workload keeps it
		}
	}
	return nil
}

// servers awaits each pair's servers, the last client's server first,
// within gctx (the grace servers have after their client), and adds
// their observations and histograms to their pair's, under their role;
// what the first pair's servers and their platforms saw is recorded.
func (col *collection) servers(gctx context.Context) error {
	c, out, npairs := col.c, col.out, col.c.Pairs
	for p, pr := range col.pairs {
		for i := len(pr.servers) - 1; i >= 0; i-- {
			srv := pr.servers[i]
			sres, err := srv.await(gctx)
			if err != nil {
				return pairErr(copiesOf(c), npairs, p, fmt.Errorf("the %s finished but the %s did not: %w", pr.driver.role.Name, srv.role.Name, err))
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
				return pairErr(copiesOf(c), npairs, p, fmt.Errorf("%s: %w", srv.role.Name, err))
			}
			for _, ob := range sobs {
				ob.Role = srv.role.Name
				col.perPair[p] = append(col.perPair[p], ob)
			}
			for _, h := range sres.Histograms {
				h.Role = srv.role.Name
				col.hists[p] = append(col.hists[p], h)
			}
		}
	}
	return nil
}

// seeRunWindow records the trial's measured window, across its pairs'
// drivers, and returns each pair's.
func seeRunWindow(pairs []*pair, out *Outcome) []result.Window {
	windows := make([]result.Window, len(pairs))
	for p, pr := range pairs {
		windows[p] = result.Window{Start: pr.res.Started, End: pr.res.Ended}
	}
	first, last := span(windows)
	out.see("", map[string]string{
		SeenRunStarted: first.UTC().Format(time.RFC3339Nano),
		SeenRunEnded:   last.UTC().Format(time.RFC3339Nano),
	})
	return windows
}

// combine puts the pairs' observations and histograms into the outcome:
// one pair's as they are, several pairs' aggregated, with a flag when
// they ran together too little of their windows.
func (col *collection) combine(windows []result.Window) (Outcome, error) {
	c, out, npairs := col.c, col.out, col.c.Pairs
	if npairs == 1 {
		out.Observations, out.Histograms = col.perPair[0], col.hists[0]
		return *out, nil
	}
	var err error
	cp := copiesOf(c)
	if out.Observations, out.Histograms, err = aggregatePairs(c.Workload.For(c.Cell.Params), cp, col.perPair, col.hists, windows); err != nil {
		return *out, err
	}
	for _, ob := range out.Observations {
		if ob.Metric == overlapMetric && ob.Kind == cp.kind && ob.Value < minPairsOverlap {
			out.Flags = fmt.Sprintf("the %d %ss ran together for only %.0f%% of their mean window (want %.0f%%): some started late or ended early", npairs, cp.noun, ob.Value, minPairsOverlap)
		}
	}
	return *out, nil
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
