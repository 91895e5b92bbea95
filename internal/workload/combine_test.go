package workload

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

func TestCombineResolve(t *testing.T) {
	for _, c := range []struct {
		c    Combine
		unit string
		want How
	}{
		{Combine{}, "Gbit/s", CombineRate}, {Combine{}, "ms", CombineMean}, {Rate, "IOPS", CombineRate},
		{Count, "count", CombineSum}, {PercentileOf("latency", 99), "ms", CombinePercentile},
	} {
		if got := c.c.Resolve(c.unit); got != c.want {
			t.Errorf("%+v in %s resolves to %v, want %v", c.c, c.unit, got, c.want)
		}
	}
	for c, want := range map[Combine]string{
		{}: "mean", PercentileOf("latency", 99.9): "p99.9 of the merged latency histogram", WeightedBy("sent"): "mean weighted by sent",
		MeanOf("fct"): "mean of all fct values", PairsOnly: "none (each pair's only)", Rate: "work over the span",
	} {
		if got := c.Describe("ms"); got != want {
			t.Errorf("%+v describes itself as %q, want %q", c, got, want)
		}
	}
}

// Register refuses metrics whose way of combining does not fit the
// workload's histograms and counts.
func TestCheckCombine(t *testing.T) {
	lat := Histogram{Name: "latency", Unit: "ns"}
	m := func(name, unit string, c Combine) Metric {
		return Metric{Name: name, Unit: unit, Better: result.Lower, Combine: c}
	}
	sent := m("sent", "datagrams", Count)
	for _, c := range []struct {
		name    string
		metrics []Metric
		hists   []Histogram
		errHas  string
	}{
		{"ok", []Metric{m("latency_p99", "µs", PercentileOf("latency", 99)), m("latency_mean", "µs", MeanOf("latency")), sent, m("loss_pct", "%", WeightedBy("sent")), m("tool_p50", "ms", PairsOnly)}, []Histogram{lat}, ""},
		{"undeclared histogram", []Metric{m("latency_p99", "ms", PercentileOf("fct", 99))}, []Histogram{lat}, `histogram "fct", which the workload does not declare`},
		{"quantile", []Metric{m("latency_p0", "ms", PercentileOf("latency", 0))}, []Histogram{lat}, "not in (0, 100]"},
		{"unit", []Metric{m("latency_p99", "bytes", PercentileOf("latency", 99))}, []Histogram{lat}, "in bytes cannot be read from histogram latency in ns"},
		{"percentile named, averaged", []Metric{m("latency_p99", "ms", Combine{})}, nil, "metric latency_p99 is a percentile"},
		{"weight no count", []Metric{m("sent", "datagrams", Combine{}), m("loss_pct", "%", WeightedBy("sent"))}, nil, `weighted by "sent", which is no count`},
		{"weight missing", []Metric{m("loss_pct", "%", WeightedBy("sent"))}, nil, `weighted by "sent", which is no count`},
		{"weight and histogram", []Metric{m("x", "ms", Combine{How: CombineWeighted, Weight: "sent", Histogram: "latency"}), sent}, []Histogram{lat}, "one of them"},
		{"weight histogram undeclared", []Metric{m("latency_mean", "ms", MeanOf("rtt"))}, nil, `histogram "rtt", which the workload does not declare`},
		{"histogram unread", nil, []Histogram{lat}, "histogram latency is read by no percentile"},
		{"histogram without unit", nil, []Histogram{{Name: "latency"}}, "want a unique name and a unit"},
	} {
		err := (&Spec{Type: "t", Metrics: c.metrics, Histograms: c.hists}).checkCombine()
		switch {
		case c.errHas == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.errHas)
		}
	}
}
