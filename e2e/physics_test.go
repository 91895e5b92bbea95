package e2e

import (
	"bytes"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/physics"
)

// TestPhysicsInvariant: on a real small campaign, a path that does
// strictly more work than another does not measure significantly faster —
// Docker's swarm overlay against the swarm nodes' host network (the
// audit's pair of issue 24), and a container's bridge against the host
// network on one machine — checked by physics.Check on the JSON report's
// rows, one-sided, Holm over the four comparisons, at a family-wise error
// of 1% (so a campaign where the declared order truly holds fails this
// test at most once in a hundred runs, however busy the machine: noise
// widens the intervals). About a minute on 2 cores: six swarm trials,
// each waiting for the last one's tasks to leave their nodes.
func TestPhysicsInvariant(t *testing.T) {
	requireDocker(t)
	rows, _ := runReport[analysis.Row](t, `name: e2e-physics
seed: 24
repetitions: 3
warmup: 0
timeout: 1m
factors:
  path:
    docker-host: {platform: docker, network: host}
    docker-bridge: {platform: docker, network: bridge}
    swarm-host: {platform: swarm, network: host, hosts: 2}
    swarm-overlay: {platform: swarm, network: overlay, hosts: 2}
workloads:
  - {name: stream, type: net.tcp_stream, params: {duration: 1s}}
`)
	res := physics.Check(rows, physics.Options{Alpha: 0.01})
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Comparisons {
		t.Log(c.String())
	}
	for _, s := range res.Skipped {
		t.Errorf("comparison not made (%s, %s %s): %s", s.Ordering, s.Workload, s.Metric, s.Why)
	}
	got := map[string]int{}
	for _, c := range res.Comparisons {
		got[c.Ordering.Name]++
		if c.Heavier["path"] == c.Lighter["path"] {
			t.Errorf("a cell compared with itself: %s", c)
		}
	}
	// throughput and sender_throughput, each once per ordering.
	if got["swarm overlay ⊃ swarm host network"] != 2 || got["container bridge ⊃ host network"] != 2 || len(res.Comparisons) != 4 {
		t.Errorf("comparisons %v, want the swarm's and the bridge's, two metrics each\n%s", got, text.String())
	}
	if v := res.Violations(); len(v) > 0 {
		t.Errorf("a path with strictly more work measured faster:\n%s", text.String())
	}
}
