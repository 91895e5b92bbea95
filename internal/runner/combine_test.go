package runner

import (
	"math"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// rr is a request/response workload as the real ones declare it: latency
// percentiles of a histogram in µs, a mean of its values, errors counted,
// loss a share of the requests sent, and a percentile a tool printed.
var rr = &workload.Spec{
	Metrics: []workload.Metric{
		{Name: "requests_per_sec", Unit: "req/s", Better: result.Higher},
		{Name: "latency_mean", Unit: "ms", Better: result.Lower, Combine: workload.MeanOf("latency")},
		{Name: "latency_p50", Unit: "ms", Better: result.Lower, Combine: workload.PercentileOf("latency", 50)},
		{Name: "latency_p99", Unit: "ms", Better: result.Lower, Combine: workload.PercentileOf("latency", 99)},
		{Name: "latency_p999", Unit: "ms", Better: result.Lower, Combine: workload.PercentileOf("latency", 99.9)},
		{Name: "errors", Unit: "count", Better: result.Lower, Combine: workload.Count},
		{Name: "sent", Unit: "requests", Better: result.Higher, Combine: workload.Count},
		{Name: "loss_pct", Unit: "%", Better: result.Lower, Combine: workload.WeightedBy("sent")},
		{Name: "tool_p99", Unit: "ms", Better: result.Lower, Combine: workload.PairsOnly},
	},
	Histograms: []workload.Histogram{{Name: "latency", Unit: "µs"}},
}

// latencies returns a histogram holding counts[v] values v (µs), encoded,
// and its p50, p99 and p99.9 in ms, as a workload would read them.
func latencies(t *testing.T, counts map[int64]int64) (result.Histogram, [3]float64) {
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
	var ps [3]float64
	for i, q := range []float64{50, 99, 99.9} {
		ps[i], _ = hdr.Percentile(h, q, "µs", "ms")
	}
	return result.Histogram{Metric: "latency", Unit: "µs", Data: data}, ps
}

// Two pairs, one fast (1000 requests of 1 ms), one slow (1000 of 10 ms and
// 20 of 100 ms): the trial's percentiles are those of all 2020 requests —
// p99 10 ms, where the mean of the pairs' p99s (1 and 100 ms) is 50.5;
// p50 10 ms (mean 5.5). Counts add up; the loss is Σlost/Σsent; the mean
// latency is the mean of all requests; a tool's percentile gets no
// aggregate.
func TestAggregatePairsCombinesAsDeclared(t *testing.T) {
	fast, pf := latencies(t, map[int64]int64{1000: 1000})
	slow, ps := latencies(t, map[int64]int64{10_000: 1000, 100_000: 20})
	pair := func(p [3]float64, mean, errs, sent, loss float64) []result.Observation {
		ob := func(m string, v float64) result.Observation {
			d, _ := rr.Metric(m)
			return result.Observation{Metric: m, Value: v, Unit: d.Unit}
		}
		return []result.Observation{
			ob("requests_per_sec", 100), ob("latency_mean", mean), ob("latency_p50", p[0]), ob("latency_p99", p[1]), ob("latency_p999", p[2]),
			ob("errors", errs), ob("sent", sent), ob("loss_pct", loss), ob("tool_p99", p[1]),
			{Metric: "tcp_retrans_segs", Kind: result.KindTelemetry, Value: errs + 1, Unit: "count"},
			{Metric: "memory_peak_bytes", Kind: result.KindTelemetry, Value: 1000 * sent, Unit: "bytes"},
			{Metric: "softirq_net_rx", Kind: result.KindTelemetry, Value: 100 * errs, Unit: "count"},
		}
	}
	per := [][]result.Observation{pair(pf, 1, 3, 100, 10), pair(ps, (10*1000+100*20)/1020.0, 5, 10000, 1)}
	t0 := time.Unix(1000, 0)
	windows := []result.Window{{Start: t0, End: t0.Add(time.Second)}, {Start: t0, End: t0.Add(time.Second)}}
	obs, hists, err := aggregatePairs(rr, pairCopies, per, [][]result.Histogram{{fast}, {slow}}, windows)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, o := range obs {
		got[o.ID().String()] = o.Value
	}
	for name, want := range map[string]float64{
		"latency_p50": 10, "latency_p99": 10, "latency_p999": 100, // all 2020 requests'
		"latency_mean":                (1*1000 + 10*1000 + 100*20) / 2020.0,
		"errors":                      8, // 3 + 5, not their mean
		"sent":                        10100,
		"loss_pct":                    100 * (10 + 100) / 10100.0,        // Σlost/Σsent, not (10 + 1)/2
		"telemetry.tcp_retrans_segs":  10,                                // a cumulative counter: 4 + 6
		"telemetry.memory_peak_bytes": (100000 + 10000000) / 2.0,         // a level: the mean
		"telemetry.softirq_net_rx":    (300 + 500) / 2.0,                 // the machine's, read by both pairs: the mean
		"requests_per_sec":            200,                               // a rate, together: the sum
		"pair1.latency_p99":           pf[1], "pair2.latency_p99": ps[1], // each pair's stays
		"pair1.tool_p99": pf[1], "pair2.tool_p99": ps[1],
	} {
		g, ok := got[name]
		if !ok || math.Abs(g-want) > want*0.001 {
			t.Errorf("%s = %v (present %v), want %v within 0.1%%", name, g, ok, want)
		}
	}
	if v, ok := got["tool_p99"]; ok {
		t.Errorf("a tool's p99 without its histogram has an aggregate: %v (the mean of the pairs' p99s)", v)
	}

	// The trial keeps each pair's histogram and the merged one.
	want := map[result.Scope][]int{result.ScopePair: {1, 2}, result.ScopeAggregate: {0}}
	gotScopes := map[result.Scope][]int{}
	for _, h := range hists {
		gotScopes[h.Scope] = append(gotScopes[h.Scope], h.Index)
		if h.Scope == result.ScopeAggregate {
			m, err := hdr.Decode(h.Data)
			if err != nil {
				t.Fatal(err)
			}
			if m.TotalCount() != 2020 || h.Metric != "latency" || h.Unit != "µs" {
				t.Errorf("merged histogram of %s in %s holds %d values, want 2020", h.Metric, h.Unit, m.TotalCount())
			}
		}
	}
	if len(hists) != 3 || len(gotScopes[result.ScopePair]) != 2 || gotScopes[result.ScopePair][1] != 2 || len(gotScopes[result.ScopeAggregate]) != 1 {
		t.Errorf("histograms by scope %v, want %v", gotScopes, want)
	}
}

// A pair without the histogram (or without the count that weighs it) makes
// the aggregate unknown: it is left out, never averaged.
func TestAggregatePairsLeavesOutWhatItCannotCombine(t *testing.T) {
	h, p := latencies(t, map[int64]int64{1000: 10})
	per := [][]result.Observation{
		{{Metric: "latency_p99", Value: p[1]}, {Metric: "loss_pct", Value: 1}, {Metric: "sent", Value: 10}},
		{{Metric: "latency_p99", Value: p[1]}, {Metric: "loss_pct", Value: 2}},
	}
	t0 := time.Unix(1000, 0)
	windows := []result.Window{{Start: t0, End: t0.Add(time.Second)}, {Start: t0, End: t0.Add(time.Second)}}
	obs, hists, err := aggregatePairs(rr, pairCopies, per, [][]result.Histogram{{h}, nil}, windows)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if o.Scope == result.ScopeAggregate && o.Kind != result.KindPairs && o.Metric != "sent" {
			t.Errorf("aggregate %s = %v from incomplete pairs", o.Metric, o.Value)
		}
	}
	for _, h := range hists {
		if h.Scope == result.ScopeAggregate {
			t.Errorf("a merged histogram of one pair of two")
		}
	}
}
