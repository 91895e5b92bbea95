package runner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Lifecycle runs a creation-time trial (S1 Exps 2 and 3): the cell's
// `instances` hosting entities are asked for at once; each runs the
// workload's near-empty role, says it is up, exits and is removed. Every
// phase the platform times is recorded per entity, as durations that add
// up to the entity's total, and summarised over the entities.
type Lifecycle struct{}

// entity is one hosting entity's life as the runner saw it.
type entity struct {
	seen    map[string]string // what the platform saw of it (platform.Seer)
	timings platform.Timings
	engine  map[vocab.Phase]time.Time // the engine's own timestamps, where it has them
	obs     []result.Observation      // the role's own result (the command's time)
}

// Run implements TrialRunner.
func (Lifecycle) Run(ctx context.Context, env *Env, t Trial) (out Outcome, err error) {
	c := t.Cell
	in := &instances{env: env, seq: t.Seq}
	defer in.cleanup(ctx, &out)
	role := c.Driver()
	n := c.Pairs
	ents := make([]entity, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("ctrbench-%s-%s-%s%d-%s", env.CampaignID, t.tag(), role.Name, i+1, env.Token)
			inv := invocation.Agent{Kind: invocation.Run, Workload: c.WorkloadType, Role: role.Name, Params: c.Params}
			ents[i], errs[i] = live(ctx, in, role, name, inv)
		}()
	}
	wg.Wait()
	if err := firstPairErr(instanceCopies, errs); err != nil {
		return out, err
	}
	out.Observations = lifecycleObservations(ents)
	out.see("platform.", ents[0].seen)
	return out, nil
}

// live starts one entity and follows it to its removal.
func live(ctx context.Context, in *instances, role plan.Role, name string, inv invocation.Agent) (entity, error) {
	var e entity
	var owner string
	s, err := in.start(ctx, role, name, inv, &owner)
	if err != nil {
		return e, err
	}
	if _, err := s.awaitReady(ctx); err != nil {
		return e, err
	}
	readyAt := s.readyAt
	if sr, ok := s.inst.(platform.Seer); ok {
		e.seen = sr.Seen()
	}
	res, err := s.await(ctx)
	if err != nil {
		return e, err
	}
	if e.obs, _, err = observations(res); err != nil {
		return e, err
	}
	if _, err := s.inst.Wait(ctx); err != nil {
		return e, platformErr(fmt.Errorf("%s: waiting for its exit: %w", name, err))
	}
	if err := s.inst.Remove(ctx); err != nil {
		return e, platformErr(fmt.Errorf("%s: removing it: %w", name, err))
	}
	e.timings = s.inst.Timings()
	if e.timings.At == nil {
		e.timings.At = map[vocab.Phase]time.Time{}
	}
	e.timings.At[vocab.Ready] = readyAt
	if et, ok := s.inst.(platform.EngineTimer); ok {
		if e.engine, err = et.EngineTimings(ctx); err != nil {
			return e, platformErr(fmt.Errorf("%s: the engine's timestamps: %w", name, err))
		}
	}
	return e, nil
}

// lifecycleObservations turns the entities' lives into the trial's
// observations: each entity's phases as durations (each from the end of
// the phase before, the first from when it was asked for) and its total,
// the same from the engine's timestamps where it has them (engine_<phase>),
// the command's own time; then over the entities the makespan and, for the
// total and each phase every entity has, the median, 99th percentile and
// maximum; and the phases of the slowest entity.
func lifecycleObservations(ents []entity) []result.Observation {
	lc := func(metric string, v float64) result.Observation {
		return result.Observation{Metric: metric, Kind: result.KindLifecycle, Value: v, Unit: "s", Better: result.Lower}
	}
	var out []result.Observation
	per := map[string][]float64{}
	var slowest []result.Observation
	slowestTotal := math.Inf(-1)
	var first, last, gone time.Time
	for i, e := range ents {
		var own []result.Observation
		durs := phaseDurations(e.timings.Requested, e.timings.At)
		total := 0.0
		for _, d := range durs {
			own = append(own, lc(string(d.phase), d.seconds))
			per[string(d.phase)] = append(per[string(d.phase)], d.seconds)
			total += d.seconds
		}
		own = append(own, lc("total", total))
		per["total"] = append(per["total"], total)
		for _, d := range phaseDurations(e.timings.Requested, e.engine) {
			own = append(own, lc("engine_"+string(d.phase), d.seconds))
		}
		own = append(own, e.obs...)
		if total > slowestTotal {
			slowestTotal, slowest = total, nil
			for _, d := range durs {
				slowest = append(slowest, lc("slowest_"+string(d.phase), d.seconds))
			}
		}
		if r := e.timings.Requested; first.IsZero() || r.Before(first) {
			first = r
		}
		if x, ok := e.timings.At[vocab.Exit]; ok && x.After(last) {
			last = x
		}
		if x, ok := e.timings.At[vocab.Remove]; ok && x.After(gone) {
			gone = x
		}
		for _, ob := range own {
			if len(ents) > 1 {
				ob.Scope, ob.Index = result.ScopeInstance, i+1
			}
			out = append(out, ob)
		}
	}
	var trial []result.Observation
	measure := func(metric string, v float64) {
		trial = append(trial, result.Observation{Metric: metric, Value: v, Unit: "s", Better: result.Lower})
	}
	if !last.IsZero() {
		measure("makespan", last.Sub(first).Seconds())
	}
	if !gone.IsZero() {
		measure("span", gone.Sub(first).Seconds())
	}
	for _, what := range append([]string{"total"}, vocab.Strings(vocab.Phases)...) {
		vs := per[what]
		if len(vs) != len(ents) {
			continue // not every entity's: no statistic over them
		}
		slices.Sort(vs)
		measure(what+"_p50", nearestRank(vs, 0.50))
		measure(what+"_p99", nearestRank(vs, 0.99))
		measure(what+"_max", vs[len(vs)-1])
	}
	for i := range slowest {
		slowest[i].Scope = result.ScopeAggregate
	}
	return append(append(trial, slowest...), out...)
}

// phaseDuration is how long one phase took.
type phaseDuration struct {
	phase   vocab.Phase
	seconds float64
}

// phaseDurations are the phases timed in at, in their order, each from the
// end of the one before (the first from requested). They add up to the
// last phase's end minus requested. A phase can end before the one listed
// before it as seen by a client (the agent's first word can arrive before
// the engine's start call returns): its duration is then negative, as
// measured, and the sum still holds.
func phaseDurations(requested time.Time, at map[vocab.Phase]time.Time) []phaseDuration {
	if requested.IsZero() {
		return nil
	}
	var out []phaseDuration
	prev := requested
	for _, ph := range vocab.Phases {
		t, ok := at[ph]
		if !ok || t.IsZero() {
			continue
		}
		out = append(out, phaseDuration{ph, t.Sub(prev).Seconds()})
		prev = t
	}
	return out
}

// nearestRank is the q-quantile of sorted values by the nearest-rank rule.
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
