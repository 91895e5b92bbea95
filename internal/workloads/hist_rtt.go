package workloads

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// rttHist accumulates round-trip times for the request/response workloads:
// an HDR histogram in nanoseconds (3 significant digits, so any percentile
// is within 0.1% of the true value) and an exact sum for the mean. One
// goroutine records; Observations computes once at the end.
type rttHist struct {
	h   *hdrhistogram.Histogram
	sum time.Duration
	n   int64
}

// rttHistMax is the largest round trip recorded as itself; longer ones are
// recorded as rttHistMax (an hour: no request/response trial waits that long).
const rttHistMax = time.Hour

func newRTTHist() *rttHist {
	return &rttHist{h: hdrhistogram.New(1, int64(rttHistMax), 3)}
}

// Record adds one round trip.
func (r *rttHist) Record(d time.Duration) {
	if d < 1 {
		d = 1
	}
	if d > rttHistMax {
		d = rttHistMax
	}
	_ = r.h.RecordValue(int64(d)) // in range by the clamps above
	r.sum += d
	r.n++
}

// Count is the number of round trips recorded.
func (r *rttHist) Count() int64 { return r.n }

// Mean is the exact mean round trip.
func (r *rttHist) Mean() time.Duration {
	if r.n == 0 {
		return 0
	}
	return r.sum / time.Duration(r.n)
}

// Quantile returns the round trip at percentile q (0-100).
func (r *rttHist) Quantile(q float64) time.Duration {
	return time.Duration(r.h.ValueAtQuantile(q))
}

// Observations are latency_mean, latency_p50, latency_p99 and latency_p999
// in microseconds.
func (r *rttHist) Observations() []result.Observation {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	o := func(name string, d time.Duration) result.Observation {
		return result.Observation{Metric: name, Value: us(d), Unit: "µs", Better: result.Lower}
	}
	return []result.Observation{
		o("latency_mean", r.Mean()),
		o("latency_p50", r.Quantile(50)),
		o("latency_p99", r.Quantile(99)),
		o("latency_p999", r.Quantile(99.9)),
	}
}

// rttHistogram declares the histogram of round trips the request/response
// workloads record and return.
var rttHistogram = workload.Histogram{Name: "latency", Unit: "ns", Doc: "round trip of every transaction"}

// rttMetrics describes the metrics of rttHist.Observations; what says what
// one round trip is.
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
