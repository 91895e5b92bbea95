package workloads

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// latencies is one connection's record of its correct requests' latencies
// in microseconds; the load generator merges every connection's at the end.
// A latency beyond the histogram's range is recorded at its top and
// counted, never dropped: percentiles still count the request.
type latencies struct {
	h       *hdrhistogram.Histogram
	max     int64 // µs: the longest latency recorded as itself
	clamped int64 // latencies longer than max, recorded as max
}

// latencyRange is the longest latency a histogram holds as itself. A
// request may take request_timeout to connect and as long again to be
// answered; in open loop its latency counts from its intended send time,
// which falls behind by up to the duration when the servers cannot keep
// up. Only an open loop further behind than that is clamped.
func latencyRange(p workload.Values) time.Duration {
	return p.Duration("duration") + 2*p.Duration("request_timeout")
}

func newLatencies(p workload.Values) *latencies {
	max := latencyRange(p).Microseconds()
	return &latencies{h: hdrhistogram.New(1, max, 3), max: max}
}

// record adds one request's latency.
func (l *latencies) record(d time.Duration) {
	us := d.Microseconds()
	if us > l.max {
		us = l.max
		l.clamped++
	}
	_ = l.h.RecordValue(us) // in range by the clamp above
}

// merge adds another connection's latencies; both have the same range.
func (l *latencies) merge(o *latencies) {
	l.h.Merge(o.h)
	l.clamped += o.clamped
}
