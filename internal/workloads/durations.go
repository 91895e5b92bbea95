package workloads

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// durations accumulates durations — round trips, flow completion times,
// event times — in an HDR histogram in nanoseconds (3 significant digits,
// so any percentile is within 0.1% of the true value) and an exact sum for
// the mean. One goroutine records; Observations computes once at the end,
// and keep hands the histogram to the agent, so that the percentiles can
// be read again over pairs and repetitions.
type durations struct {
	decl workload.Histogram
	h    *hdrhistogram.Histogram
	max  time.Duration
	sum  time.Duration
	n    int64
}

// durationHistogram declares a histogram of durations.
func durationHistogram(name, doc string) workload.Histogram {
	return workload.Histogram{Name: name, Unit: "ns", Doc: doc}
}

// Longest durations recorded as themselves; longer ones are recorded as
// these. No request/response trial waits an hour for a round trip; no
// trial runs a day.
const (
	rttMax  = time.Hour
	longMax = 24 * time.Hour
)

// newDurations records into the declared histogram, made by
// durationHistogram.
func newDurations(decl workload.Histogram, max time.Duration) *durations {
	return &durations{decl: decl, h: hdrhistogram.New(1, int64(max), 3), max: max}
}

// Record adds one duration.
func (r *durations) Record(d time.Duration) {
	d = min(max(d, 1), r.max)
	_ = r.h.RecordValue(int64(d)) // in range by the clamps above
	r.sum += d
	r.n++
}

// Count is the number of durations recorded.
func (r *durations) Count() int64 { return r.n }

// Mean is the exact mean duration.
func (r *durations) Mean() time.Duration {
	if r.n == 0 {
		return 0
	}
	return r.sum / time.Duration(r.n)
}

// Quantile returns the duration at percentile q (0-100).
func (r *durations) Quantile(q float64) time.Duration {
	return time.Duration(r.h.ValueAtQuantile(q))
}

// Observations are the metrics of ms read from these durations: their mean
// (declared MeanOf the histogram) and percentiles (PercentileOf), each in
// its metric's unit, in the order ms declares them.
func (r *durations) Observations(ms []workload.Metric) []result.Observation {
	var out []result.Observation
	for _, m := range ms {
		if c := m.Combine; c.How == workload.CombineWeighted && c.Histogram == r.decl.Name {
			v, _ := hdr.Convert(int64(r.Mean()), r.decl.Unit, m.Unit) // units checked by workload.Register
			out = append(out, result.Observation{Metric: m.Name, Value: v, Unit: m.Unit, Better: m.Better})
		}
		out = append(out, percentileObservations([]workload.Metric{m}, r.decl, r.h)...)
	}
	return out
}

// keep hands the histogram to the agent.
func (r *durations) keep(env workload.Env) error { return keepHistogram(env, r.decl, r.h) }

// rttHistogram declares the histogram of round trips the request/response
// workloads record and return.
var rttHistogram = durationHistogram("latency", "round trip of every transaction")

// rttMetrics describes the metrics read from the round trips; what says
// what one round trip is.
func rttMetrics(what string) []workload.Metric {
	m := func(name, doc string, c workload.Combine) workload.Metric {
		return workload.Metric{Name: name, Unit: "µs", Better: result.Lower, Doc: doc + " " + what, Combine: c}
	}
	return []workload.Metric{
		m("latency_mean", "mean", workload.MeanOf(rttHistogram.Name)),
		m("latency_p50", "median", workload.PercentileOf(rttHistogram.Name, 50)),
		m("latency_p99", "99th percentile", workload.PercentileOf(rttHistogram.Name, 99)),
		m("latency_p999", "99.9th percentile", workload.PercentileOf(rttHistogram.Name, 99.9)),
	}
}
