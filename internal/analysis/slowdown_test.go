package analysis

import (
	"math"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// S1's slowdown compares one instance's rate with the baseline's, from
// each trial's mean over its instances — not from the instances' sum,
// which is the aggregate row's mean.
func TestSlowdownFromInstanceMeans(t *testing.T) {
	inst := func(i int) result.MetricID {
		return result.MetricID{Metric: "throughput", Scope: result.ScopeInstance, Kind: result.KindMeasure, Index: i}
	}
	var m trialMaker
	var trials []result.Trial
	for _, v := range []float64{99, 100, 101} {
		trials = append(trials, m.ok(1, ob(throughput, v)))
		// Four instances at about a quarter of the rate each: a slowdown of 4.
		trials = append(trials, m.ok(2, ob(aggregate, 4*v/4), ob(inst(1), v/4-1), ob(inst(2), v/4+1), ob(inst(3), v/4), ob(inst(4), v/4)))
	}
	camp := result.Campaign{ID: "c", Baseline: map[string]string{vocab.FInstances: "1"}}
	cells := []result.Cell{cell(1, map[string]string{vocab.FInstances: "1"}), cell(2, map[string]string{vocab.FInstances: "4"})}
	rows := Rows(load(t, NewMemory(camp, cells, trials)).Series)
	var got *Row
	for i, r := range rows {
		if r.ID.Metric == "throughput" && r.ID.Scope == result.ScopeAggregate {
			got = &rows[i]
		}
		if r.ID.Scope == result.ScopeInstance && r.Slowdown != nil {
			t.Errorf("%s: a slowdown on one instance's row", r.Metric)
		}
	}
	if got == nil || got.Slowdown == nil || got.SlowdownCI95 == nil {
		t.Fatalf("no slowdown on the aggregate row: %+v", got)
	}
	if math.Abs(*got.Slowdown-4) > 1e-9 || !(got.SlowdownCI95[0] < 4 && 4 < got.SlowdownCI95[1]) {
		t.Errorf("slowdown %v [%v], want 4 inside its interval", *got.Slowdown, *got.SlowdownCI95)
	}
	if *got.VsBaselinePct != 0 {
		t.Errorf("the aggregate (the instances' sum) against one instance: %v%%, want 0", *got.VsBaselinePct)
	}
}
