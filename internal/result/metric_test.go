package result

import "testing"

// Every name the writers before schema version 4 produced parses into its
// identity and prints back unchanged.
func TestMetricNamesRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		pairs bool
		want  MetricID
	}{
		{"throughput", false, MetricID{Metric: "throughput", Scope: ScopeTrial, Kind: KindMeasure}},
		{"throughput", true, MetricID{Metric: "throughput", Scope: ScopeAggregate, Kind: KindMeasure}},
		{"telemetry.cpu_seconds", false, MetricID{Metric: "cpu_seconds", Scope: ScopeTrial, Kind: KindTelemetry}},
		{"server.throughput", false, MetricID{Metric: "throughput", Scope: ScopeTrial, Kind: KindMeasure, Role: "server"}},
		{"pong.telemetry.cpu_seconds", false, MetricID{Metric: "cpu_seconds", Scope: ScopeTrial, Kind: KindTelemetry, Role: "pong"}},
		{"pair3.throughput", true, MetricID{Metric: "throughput", Scope: ScopePair, Kind: KindMeasure, Index: 3}},
		{"pair12.server.telemetry.tcp_out_segs", true, MetricID{Metric: "tcp_out_segs", Scope: ScopePair, Kind: KindTelemetry, Role: "server", Index: 12}},
		{"server.telemetry.cpu_seconds", true, MetricID{Metric: "cpu_seconds", Scope: ScopeAggregate, Kind: KindTelemetry, Role: "server"}},
		{"pairs.jain", true, MetricID{Metric: "jain", Scope: ScopeAggregate, Kind: KindPairs}},
		{"pairs.overlap_pct", true, MetricID{Metric: "overlap_pct", Scope: ScopeAggregate, Kind: KindPairs}},
		{"neighbour.overlap_pct", false, MetricID{Metric: "overlap_pct", Scope: ScopeNeighbour, Kind: KindMeasure}},
		{"neighbour.iterations", false, MetricID{Metric: "iterations", Scope: ScopeNeighbour, Kind: KindMeasure}},
		{"neighbour.telemetry.cpu_seconds", false, MetricID{Metric: "cpu_seconds", Scope: ScopeNeighbour, Kind: KindTelemetry, Index: 1}},
		{"neighbour2.telemetry.cpu_seconds", false, MetricID{Metric: "cpu_seconds", Scope: ScopeNeighbour, Kind: KindTelemetry, Index: 2}},
		{"server.lifecycle.start", false, MetricID{Metric: "start", Scope: ScopeTrial, Kind: KindLifecycle, Role: "server"}},
	}
	for _, c := range cases {
		got := ParseMetricName(c.name, c.pairs)
		if got != c.want {
			t.Errorf("ParseMetricName(%q, %v) = %+v, want %+v", c.name, c.pairs, got, c.want)
		}
		if s := got.String(); s != c.name {
			t.Errorf("%+v prints as %q, want %q", got, s, c.name)
		}
	}
}

// An observation without a scope or kind is the trial's own measurement.
func TestObservationIDDefaults(t *testing.T) {
	id := Observation{Metric: "x"}.ID()
	if id.Scope != ScopeTrial || id.Kind != KindMeasure || id.String() != "x" {
		t.Errorf("got %+v", id)
	}
}
