package e2e

import (
	"testing"
)

type irRow struct {
	Workload    string            `json:"workload"`
	Metric      string            `json:"metric"`
	Cell        map[string]string `json:"cell"`
	N           int               `json:"n"`
	Mean        float64           `json:"mean"`
	IR          *float64          `json:"ir"`
	IRCI95      *[2]float64       `json:"ir_ci95"`
	IRExcludes0 *bool             `json:"ir_excludes_0"`
}

// The A/A check of the instrument: a neighbour that does nothing must not
// show interference — the IR interval of the target contains 0 — and it
// covered the target's whole window.
func TestInterferenceAA(t *testing.T) {
	requireDocker(t)
	rows, _ := runReport[irRow](t, `name: e2e-aa
seed: 9
repetitions: 6
factors:
  platform: [docker]
  antagonist: [idle]
  packaging: [separate-containers]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 1s, max_prime: 5000}}
`)
	var ir *irRow
	overlap := 0.0
	for i, x := range rows {
		if x.Cell["antagonist"] == "idle" && x.Metric == "events_per_sec" {
			ir = &rows[i]
		}
		if x.Metric == "antagonist.overlap_pct" {
			overlap = x.Mean
		}
	}
	if ir == nil || ir.IR == nil {
		t.Fatalf("no IR for the idle neighbour: %+v", rows)
	}
	if *ir.IRExcludes0 {
		t.Errorf("an idle neighbour showed interference: IR %.3f %v", *ir.IR, *ir.IRCI95)
	}
	if overlap < 99 {
		t.Errorf("the idle neighbour covered %.1f%% of the target's window", overlap)
	}
}

// The known effect: two CPU-bound workloads in one container limited to one
// core each get half of it, so the target's rate drops by half: IR -0.5.
func TestInterferenceKnownEffect(t *testing.T) {
	requireDocker(t)
	rows, _ := runReport[irRow](t, `name: e2e-known-effect
seed: 10
repetitions: 3
factors:
  platform: [docker]
  cpus: ["1"]
  antagonist: [cpu]
  packaging: [same-container]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000, threads: 1}}
`)
	for _, x := range rows {
		if x.Cell["antagonist"] != "cpu" || x.Metric != "events_per_sec" {
			continue
		}
		if x.IR == nil {
			t.Fatal("no IR")
		}
		if *x.IR < -0.57 || *x.IR > -0.43 {
			t.Errorf("IR %.3f [%v], want -0.5 ± 0.07", *x.IR, *x.IRCI95)
		}
		return
	}
	t.Fatalf("no row for the target beside its neighbour: %+v", rows)
}
