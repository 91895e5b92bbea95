package e2e

import (
	"strings"
	"testing"
)

// slowdownRow is a JSON report row with what S1's Exp 1 reads.
type slowdownRow struct {
	Metric       string            `json:"metric"`
	Cell         map[string]string `json:"cell"`
	N            int               `json:"n"`
	Mean         float64           `json:"mean"`
	Slowdown     *float64          `json:"slowdown"`
	SlowdownCI95 *[2]float64       `json:"slowdown_ci95"`
}

// TestInstancesSlowdown is S1's Exp 1 in small: four copies of a
// one-thread CPU workload on this 2-core machine each get about half a
// core, so each is about twice as slow as one instance on bare metal — on
// native and on docker. Each copy's result is kept, and the copies ran
// together: all are started, then all get the go signal.
func TestInstancesSlowdown(t *testing.T) {
	requireDocker(t)
	rows, _ := runReport[slowdownRow](t, `name: e2e-instances
seed: 5
repetitions: 3
baseline: {platform: native, instances: 1}
factors:
  platform: [native, docker]
  instances: [1, 4]
exclude:
  - {platform: docker, instances: 1}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 1500ms, max_prime: 3000}}
`)
	copies := map[string]int{}
	for _, r := range rows {
		if head, _, ok := strings.Cut(r.Metric, "."); ok && strings.HasPrefix(head, "instance") && head != "instances" {
			copies[r.Cell["platform"]]++
		}
		if r.Metric == "instances.overlap_pct" && r.Mean < 90 {
			t.Errorf("%s: the instances overlapped for %.0f%% of their window", r.Cell["platform"], r.Mean)
		}
		if r.Metric != "events_per_sec" || r.Cell["instances"] != "4" {
			continue
		}
		if r.Slowdown == nil {
			t.Fatalf("%s instances 4: no slowdown in %+v", r.Cell["platform"], r)
		}
		// Two cores shared by four busy threads: 2, give or take the
		// machine's noise and what else runs. One disturbed trial of three
		// (this is a shared machine) widens the interval rather than
		// moving a tight one: the claim holds while the interval holds 2.
		consistent := r.SlowdownCI95 != nil && r.SlowdownCI95[0] <= 2 && 2 <= r.SlowdownCI95[1]
		if (*r.Slowdown < 1.6 || *r.Slowdown > 2.6) && !consistent {
			t.Errorf("%s instances 4: slowdown %.2f %v, want about 2", r.Cell["platform"], *r.Slowdown, r.SlowdownCI95)
		}
		t.Logf("%s instances 4: slowdown %.2f %v", r.Cell["platform"], *r.Slowdown, r.SlowdownCI95)
	}
	// events_per_sec, latency_avg, latency_p95... of each of 4 copies.
	for _, p := range []string{"native", "docker"} {
		if copies[p] < 4 {
			t.Errorf("%s: %d per-instance rows, want each of the 4 copies' own", p, copies[p])
		}
	}
}
