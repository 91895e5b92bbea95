package workloads

import (
	"testing"
	"time"
)

// A request slower than the histogram used to hold (120 s, in fact 134 s) vanished from
// the percentiles while request_timeout allows 10 minutes: with a timeout
// that long it is recorded as itself; beyond the histogram's range it is
// recorded at the top and counted, never dropped.
func TestSlowRequestsStayInThePercentiles(t *testing.T) {
	p := values(t, "http.pingpong", map[string]string{"request_timeout": "600s", "duration": "1s"})
	l := newLatencies(p)
	l.record(2 * time.Millisecond)
	l.record(200 * time.Second)
	if n := l.h.TotalCount(); n != 2 {
		t.Fatalf("%d latencies recorded of 2", n)
	}
	if got := time.Duration(l.h.ValueAtQuantile(100)) * time.Microsecond; got < 200*time.Second || got > 200200*time.Millisecond {
		t.Errorf("slowest request %s, want 200 s (within 0.1%%)", got)
	}

	short := values(t, "http.pingpong", map[string]string{"request_timeout": "1s", "duration": "1s"})
	l = newLatencies(short)
	l.record(2 * time.Millisecond)
	l.record(200 * time.Second)
	if n := l.h.TotalCount(); n != 2 || l.clamped != 1 {
		t.Fatalf("%d latencies recorded of 2, %d clamped (want 1)", n, l.clamped)
	}
}
