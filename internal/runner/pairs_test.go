package runner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// tput is a workload whose headline is throughput.
var tput = &workload.Spec{Metrics: []workload.Metric{{Name: "throughput", Unit: "Gbit/s", Better: result.Higher}}}

func TestAggregatePairs(t *testing.T) {
	ob := func(m string, v float64, unit string) result.Observation {
		return result.Observation{Metric: m, Value: v, Unit: unit, Better: result.Higher}
	}
	per := [][]result.Observation{
		{ob("throughput", 1, "Gbit/s"), ob("jitter", 10, "ms")},
		{ob("throughput", 3, "Gbit/s"), ob("jitter", 30, "ms")},
	}
	t0 := time.Unix(1000, 0)
	windows := []result.Window{{Start: t0, End: t0.Add(10 * time.Second)}, {Start: t0.Add(time.Second), End: t0.Add(11 * time.Second)}}
	got := map[string]float64{}
	obs, _, err := aggregatePairs(tput, pairCopies, per, nil, windows)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		got[o.ID().String()] = o.Value
	}
	want := map[string]float64{
		"throughput": (1*10 + 3*10) / 11.0, "jitter": 20, // rates: the work over the span (11 s); the rest: the mean
		"pair1.throughput": 1, "pair2.throughput": 3, "pair1.jitter": 10, "pair2.jitter": 30,
		"pairs.jain":          16.0 / (2 * 10), // (1+3)² / (2·(1+9))
		"pairs.max_min_ratio": 3,
		"pairs.overlap_pct":   90, // 9 s together of a 10 s mean window
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d observations, want %d: %v", len(got), len(want), got)
	}
}

// Pairs that ran one after the other do not add up their rates.
func TestAggregatePairsApart(t *testing.T) {
	per := [][]result.Observation{{{Metric: "throughput", Value: 10, Unit: "Gbit/s"}}, {{Metric: "throughput", Value: 10, Unit: "Gbit/s"}}}
	t0 := time.Unix(1000, 0)
	windows := []result.Window{{Start: t0, End: t0.Add(time.Second)}, {Start: t0.Add(time.Second), End: t0.Add(2 * time.Second)}}
	got := map[string]float64{}
	obs, _, err := aggregatePairs(tput, pairCopies, per, nil, windows)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		got[o.ID().String()] = o.Value
	}
	if got["throughput"] != 10 || got["pairs.overlap_pct"] != 0 {
		t.Errorf("back-to-back pairs: aggregate %v (want 10, not 20), overlap %v", got["throughput"], got["pairs.overlap_pct"])
	}
}

// Identity is structured: a pair's metric has scope pair and its index, a
// server's keeps its role, the aggregate has scope aggregate, and the
// statistics across pairs are of kind pairs.
func TestAggregatePairsIdentity(t *testing.T) {
	per := [][]result.Observation{
		{{Metric: "throughput", Value: 1, Unit: "Gbit/s"}, {Metric: "cpu_seconds", Role: "server", Kind: result.KindTelemetry, Value: 2, Unit: "s"}},
		{{Metric: "throughput", Value: 3, Unit: "Gbit/s"}, {Metric: "cpu_seconds", Role: "server", Kind: result.KindTelemetry, Value: 4, Unit: "s"}},
	}
	t0 := time.Unix(1000, 0)
	windows := []result.Window{{Start: t0, End: t0.Add(time.Second)}, {Start: t0, End: t0.Add(time.Second)}}
	got := map[result.MetricID]float64{}
	obs, _, err := aggregatePairs(tput, pairCopies, per, nil, windows)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		got[o.ID()] = o.Value
	}
	for id, v := range map[result.MetricID]float64{
		{Metric: "cpu_seconds", Role: "server", Kind: result.KindTelemetry, Scope: result.ScopePair, Index: 2}: 4,
		{Metric: "cpu_seconds", Role: "server", Kind: result.KindTelemetry, Scope: result.ScopeAggregate}:      6, // a counter: the pairs' sum
		{Metric: "throughput", Kind: result.KindMeasure, Scope: result.ScopeAggregate}:                         4,
		{Metric: "jain", Kind: result.KindPairs, Scope: result.ScopeAggregate}:                                 0.8,
	} {
		if g, ok := got[id]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s (%+v) = %v (present %v), want %v", id, id, g, ok, v)
		}
	}
}

// Instances of a single-role workload are copies like pairs, named as
// what they are: instance<i>.<metric> and instances.<statistic>; the names
// read back to the same identities.
func TestAggregateInstances(t *testing.T) {
	per := [][]result.Observation{{{Metric: "throughput", Value: 1, Unit: "Gbit/s"}}, {{Metric: "throughput", Value: 3, Unit: "Gbit/s"}}}
	t0 := time.Unix(1000, 0)
	windows := []result.Window{{Start: t0, End: t0.Add(time.Second)}, {Start: t0, End: t0.Add(time.Second)}}
	obs, _, err := aggregatePairs(tput, instanceCopies, per, nil, windows)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, o := range obs {
		name := o.ID().String()
		got[name] = o.Value
		if back := result.ParseMetricName(name, true); back != o.ID() {
			t.Errorf("%s reads back as %+v, want %+v", name, back, o.ID())
		}
	}
	for k, v := range map[string]float64{"instance1.throughput": 1, "instance2.throughput": 3, "throughput": 4, "instances.jain": 0.8, "instances.overlap_pct": 100} {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v; got %v", k, g, ok, v, got)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "pair") {
			t.Errorf("an instance's observation is named as a pair's: %s", k)
		}
	}
}
