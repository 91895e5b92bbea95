package workloads

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// latencies is one connection's record of its correct requests' latencies
// in microseconds; the load generator merges every connection's at the end.
type latencies struct {
	h *hdrhistogram.Histogram
}

func newLatencies(workload.Values) *latencies {
	return &latencies{h: hdrhistogram.New(1, 120_000_000, 3)}
}

// record adds one request's latency.
func (l *latencies) record(d time.Duration) {
	_ = l.h.RecordValue(d.Microseconds())
}

// merge adds another connection's latencies.
func (l *latencies) merge(o *latencies) {
	l.h.Merge(o.h)
}
