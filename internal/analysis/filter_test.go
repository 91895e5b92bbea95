package analysis

import (
	"slices"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// The table's filters go by identity: telemetry is any Kind telemetry, a
// neighbour's and a pair's included; per-pair is Scope pair, whatever its
// kind; the pairs' statistics and a neighbour's measures always show.
func TestFilterByIdentity(t *testing.T) {
	var rows []Row
	for _, id := range []result.MetricID{throughput, cpuSeconds, neighCPU, overlap, pair1, pair2CPU, jain, aggregate} {
		rows = append(rows, Row{Identity: Identity{Metric: id.String(), ID: id}})
	}
	shown := func(f Filter) []string {
		var out []string
		for _, r := range f.Apply(rows) {
			out = append(out, r.Metric)
		}
		return out
	}
	for _, c := range []struct {
		f    Filter
		want []string
	}{
		{Filter{}, []string{"throughput", "neighbour.overlap_pct", "pairs.jain", "throughput"}},
		{Filter{Telemetry: true}, []string{"throughput", "telemetry.cpu_seconds", "neighbour2.telemetry.cpu_seconds", "neighbour.overlap_pct", "pairs.jain", "throughput"}},
		{Filter{PerPair: true}, []string{"throughput", "neighbour.overlap_pct", "pair1.throughput", "pairs.jain", "throughput"}},
		{Filter{Telemetry: true, PerPair: true}, []string{
			"throughput", "telemetry.cpu_seconds", "neighbour2.telemetry.cpu_seconds", "neighbour.overlap_pct",
			"pair1.throughput", "pair2.server.telemetry.cpu_seconds", "pairs.jain", "throughput"}},
	} {
		if got := shown(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%+v shows %v, want %v", c.f, got, c.want)
		}
	}
}
