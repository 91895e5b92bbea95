package analysis

import (
	"context"
	"math"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// pooledType reads latency_p99 from a histogram of latencies in µs.
const pooledType = "test.pooled"

func init() {
	workload.Register(&workload.Spec{
		Type: pooledType,
		Metrics: []workload.Metric{
			{Name: "latency_p99", Unit: "ms", Better: result.Lower, Combine: workload.PercentileOf("latency", 99)},
			{Name: "errors", Unit: "count", Better: result.Lower, Combine: workload.Count},
		},
		Histograms: []workload.Histogram{{Name: "latency", Unit: "µs"}},
		Run: map[string]workload.RunFunc{workload.Main: func(context.Context, workload.Values, workload.Env) ([]result.Observation, string, error) {
			return nil, "", nil
		}},
	})
}

// latencyTrial is an ok trial of cell whose histogram (scope as given)
// holds counts of values in µs, and whose latency_p99 is that
// histogram's, as the workload reads it.
func latencyTrial(t *testing.T, m *trialMaker, cell int, scope result.Scope, counts map[int64]int64) result.Trial {
	t.Helper()
	h := hdrhistogram.New(1, 60_000_000, 3)
	for v, n := range counts {
		if err := h.RecordValues(v, n); err != nil {
			t.Fatal(err)
		}
	}
	data, err := hdr.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	p99, _ := hdr.Percentile(h, 99, "µs", "ms")
	id := result.MetricID{Metric: "latency_p99", Scope: scope, Kind: result.KindMeasure}
	if scope == result.ScopeTrial {
		id.Scope = ""
	}
	tr := m.ok(cell, result.Observation{Metric: "latency_p99", Scope: id.Scope, Value: p99, Unit: "ms", Better: result.Lower})
	tr.ID = int64(tr.Seq)
	tr.Histograms = []result.Histogram{{Metric: "latency", Scope: id.Scope, Unit: "µs", Data: data}}
	return tr
}

// A fast repetition (1000 requests of 1 ms) and a slow one (1000 of 10 ms,
// 20 of 100 ms): the p99 of all 2020 requests is 10 ms, where the mean of
// the two trials' p99s is 50.5 ms. A trial without a histogram (an older
// ctrbench's) is counted as missing; a trial of pairs is pooled through
// its merged histogram, never its pairs'.
func TestLoadPooled(t *testing.T) {
	m := &trialMaker{}
	fast := latencyTrial(t, m, 1, result.ScopeTrial, map[int64]int64{1000: 1000})
	slow := latencyTrial(t, m, 1, result.ScopeTrial, map[int64]int64{10_000: 1000, 100_000: 20})
	old := m.ok(1, result.Observation{Metric: "latency_p99", Value: 1, Unit: "ms", Better: result.Lower})
	pairs := latencyTrial(t, m, 2, result.ScopeAggregate, map[int64]int64{5000: 100})
	pairs.Histograms = append(pairs.Histograms, result.Histogram{Metric: "latency", Scope: result.ScopePair, Index: 1, Unit: "µs", Data: slow.Histograms[0].Data})
	warm := latencyTrial(t, m, 2, result.ScopeAggregate, map[int64]int64{900_000: 100})
	warm.Warmup = true
	// A flagged trial (its pairs did not run together) is set apart from
	// the pool as from every other statistic; a cell whose only ok trial
	// is flagged has no pooled row (its trial mean would have no trials).
	odd := latencyTrial(t, m, 1, result.ScopeTrial, map[int64]int64{500_000: 1000})
	odd.Flags = "the 3 pairs ran together for only 40% of their mean window"
	alone := latencyTrial(t, m, 3, result.ScopeTrial, map[int64]int64{2000: 10})
	alone.Flags = odd.Flags
	cells := []result.Cell{
		{ID: 1, Workload: "rr", WorkloadType: pooledType, Factors: map[string]string{"pairs": "1"}},
		{ID: 2, Workload: "rr", WorkloadType: pooledType, Factors: map[string]string{"pairs": "2"}},
		{ID: 3, Workload: "rr", WorkloadType: pooledType, Factors: map[string]string{"pairs": "3"}},
	}
	trials := []result.Trial{fast, slow, old, odd, pairs, warm, alone}
	mem := NewMemory(result.Campaign{ID: "c"}, cells, trials)

	// The store's way: histograms apart from the trials, by trial ID.
	byID := map[int64][]result.Histogram{}
	for i := range trials {
		byID[trials[i].ID], trials[i].Histograms = trials[i].Histograms, nil
	}
	stored := storedHistograms{NewMemory(result.Campaign{ID: "c"}, cells, trials), byID}

	for name, src := range map[string]Source{"memory": mem, "store": stored} {
		_, got, err := LoadPooled(context.Background(), src, Query{Campaign: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("%s: %d pooled rows, want 2: %+v", name, len(got), got)
		}
		one, two := got[0], got[1]
		if one.Metric != "latency_p99" || one.Trials != 2 || one.Missing != 1 || one.Flagged != 1 || one.Values != 2020 ||
			math.Abs(one.Value-10) > 0.01 || math.Abs(one.TrialMean-(1+100.05+1)/3) > 0.1 {
			t.Errorf("%s: pairs=1 pooled %+v, want p99 10 ms of 2020 values from 2 trials, 1 missing, 1 flagged, trial mean 34", name, one)
		}
		if two.Cell["pairs"] != "2" || two.Trials != 1 || two.Values != 100 || math.Abs(two.Value-5) > 0.01 {
			t.Errorf("%s: pairs=2 pooled %+v, want the merged histogram's 100 values at 5 ms", name, two)
		}
	}
}

type storedHistograms struct {
	*Memory
	hs map[int64][]result.Histogram
}

func (s storedHistograms) Histograms(context.Context, string) (map[int64][]result.Histogram, error) {
	return s.hs, nil
}
