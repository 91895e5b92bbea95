package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// slowdownRow is a JSON report row with what S1's Exp 1 reads.
type slowdownRow struct {
	Campaign     string            `json:"campaign"`
	Metric       string            `json:"metric"`
	Cell         map[string]string `json:"cell"`
	N            int               `json:"n"`
	Mean         float64           `json:"mean"`
	Slowdown     *float64          `json:"slowdown"`
	SlowdownCI95 *[2]float64       `json:"slowdown_ci95"`
}

// TestInstancesSlowdown is S1's Exp 1 in small: four copies of a
// one-thread CPU workload on an emulated one-core machine each get a
// quarter of the core, so each is four times as slow as one instance on
// bare metal — on native and on docker. Each copy's result is kept, and
// the copies ran together: all are started, then all get the go signal.
//
// The machine is core 0 (machine: {cpuset: "0"}), not this machine's two
// cores: with four copies on two cores, a busy process outside takes a
// share of the copies' cores but not of the lone baseline's, and the
// truth moves from 2 to 2.5 (five busy threads on two cores; 2.3-3.0 was
// measured so). On one pinned core the busy process moves to the other
// core; what else lands on core 0 now and then slows a trial of either
// cell and widens the interval.
//
// Asserted on the 99.9% interval of the slowdown computed from the stored
// trials (baseline rate over the mean of each trial's four copies' rates,
// on the log scale): it lies above 1 (the effect is large: at 5
// repetitions it does so even at a coefficient of variation of 40%); it
// meets 4 within what physics allows — down to 4 times the copies'
// overlap (while one copy has not begun or has ended, the others share
// the core three ways) and up to 2% above (four copies switching on one
// core, and four agents' own work beside theirs: 4.06 was measured on a
// quiet machine); and it holds the report's slowdown. Trials whose copies
// overlapped less than 90% are flagged (that is checked, not the overlap)
// and, as in the report, left out of the interval.
// Chance failure on a quiet machine: 0.2% (two 99.9% intervals).
func TestInstancesSlowdown(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[slowdownRow](t, `name: e2e-instances
seed: 5
repetitions: 5
machine: {cpuset: "0"}
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
	reported := map[string]*slowdownRow{}
	for i, r := range rows {
		if head, _, ok := strings.Cut(r.Metric, "."); ok && strings.HasPrefix(head, "instance") && head != "instances" {
			copies[r.Cell["platform"]]++
		}
		if r.Metric == "events_per_sec" && r.Cell["instances"] == "4" {
			reported[r.Cell["platform"]] = &rows[i]
		}
	}
	// events_per_sec, latency_avg, latency_p95... of each of 4 copies.
	for _, p := range []string{"native", "docker"} {
		if copies[p] < 4 {
			t.Errorf("%s: %d per-instance rows, want each of the 4 copies' own", p, copies[p])
		}
	}
	trials := storedTrials(t, db, rows[0].Campaign)
	cells := cellFactors(t, db, rows[0].Campaign)
	base := values(t, usable(t, trials, cellOf(t, cells, map[string]string{"platform": "native", "instances": "1"})), "events_per_sec")
	for _, p := range []string{"native", "docker"} {
		r := reported[p]
		if r == nil || r.Slowdown == nil {
			t.Errorf("%s instances 4: no slowdown in %+v", p, r)
			continue
		}
		cell := cellOf(t, cells, map[string]string{"platform": p, "instances": "4"})
		for _, tr := range measured(trials, cell) {
			assertOverlapFlagged(t, tr, "instances")
		}
		var perCopy []float64 // each unflagged trial's mean over its copies
		overlap := 100.0      // the least of those trials' overlaps
		for _, tr := range usable(t, trials, cell) {
			sum := 0.0
			for i := 1; i <= 4; i++ {
				v, ok := observed(tr, fmt.Sprintf("instance%d.events_per_sec", i))
				if !ok {
					t.Fatalf("%s trial %d: no events_per_sec of instance %d", p, tr.Seq, i)
				}
				sum += v
			}
			perCopy = append(perCopy, sum/4)
			ov, _ := observed(tr, "instances.overlap_pct")
			overlap = min(overlap, ov)
		}
		_, ratio := ratioInterval(t, perCopy, base, confidence)
		slowdown := interval{1 / ratio.hi, 1 / ratio.lo}
		lo, hi := 4*overlap/100, 4*1.02
		t.Logf("%s instances 4: slowdown %.3f, 99.9%% interval %v; truth within [%.3f, %.3f] (least overlap %.1f%%)", p, *r.Slowdown, slowdown, lo, hi, overlap)
		if !(slowdown.lo > 1) {
			t.Errorf("%s instances 4: the slowdown's 99.9%% interval %v does not exclude 1", p, slowdown)
		}
		if !slowdown.meets(lo, hi) {
			t.Errorf("%s instances 4: the slowdown's 99.9%% interval %v misses [%.3f, %.3f]: four copies on one core", p, slowdown, lo, hi)
		}
		if !slowdown.contains(*r.Slowdown) {
			t.Errorf("%s instances 4: the report's slowdown %.4f is outside the 99.9%% interval %v of its own trials", p, *r.Slowdown, slowdown)
		}
	}
}
