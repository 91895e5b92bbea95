package e2e

import (
	"testing"
)

type irRow struct {
	Campaign string            `json:"campaign"`
	Workload string            `json:"workload"`
	Metric   string            `json:"metric"`
	Cell     map[string]string `json:"cell"`
	N        int               `json:"n"`
	Mean     float64           `json:"mean"`
	IR       *float64          `json:"ir"`
	IRCI95   *[2]float64       `json:"ir_ci95"`
}

// TestInterferenceAA is the A/A check of the instrument: a neighbour that
// does nothing has no effect, so IR 0 lies inside the 99.9% interval of
// the IR computed from the stored trials — and the report's IR, computed
// from the same trials, lies inside it too. Outside load slows both cells
// alike in expectation (they are interleaved) and only widens the
// interval. The idle neighbour covered the target's whole window (it is
// started first and stopped last: no matter of load).
// Chance failure on a quiet machine: 0.1% (one 99.9% interval on a truth
// of 0).
func TestInterferenceAA(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[irRow](t, `name: e2e-aa
seed: 9
repetitions: 6
factors:
  platform: [docker]
  neighbour: [idle]
  packaging: [separate-containers]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 1s, max_prime: 5000}}
`)
	var ir *irRow
	overlap := 0.0
	for i, x := range rows {
		if x.Cell["neighbour"] == "idle" && x.Metric == "events_per_sec" {
			ir = &rows[i]
		}
		if x.Metric == "neighbour.overlap_pct" {
			overlap = x.Mean
		}
	}
	if ir == nil || ir.IR == nil {
		t.Fatalf("no IR for the idle neighbour: %+v", rows)
	}
	alone, beside := irSamples(t, db, ir.Campaign, "idle")
	_, ratio := ratioInterval(t, beside, alone, confidence)
	iv := ratio.shift(-1)
	t.Logf("IR beside an idle neighbour: report %.4f, 99.9%% interval %v", *ir.IR, iv)
	if !iv.contains(0) {
		t.Errorf("an idle neighbour showed interference: IR 99.9%% interval %v excludes 0 (report: IR %.3f %v)", iv, *ir.IR, *ir.IRCI95)
	}
	if !iv.contains(*ir.IR) {
		t.Errorf("the report's IR %.4f is outside the 99.9%% interval %v of its own trials", *ir.IR, iv)
	}
	if overlap < 99 {
		t.Errorf("the idle neighbour covered %.1f%% of the target's window", overlap)
	}
}

// TestInterferenceKnownEffect is the known effect: a CPU-bound target and
// a copy of it as its neighbour, in one container pinned to one core,
// share that core, so the target's rate is half its rate alone: IR -0.5.
//
// Pinned (cpuset), not a quota (cpus: 1): under a quota of one core spread
// over two, a busy process outside takes from the container's two threads
// unevenly and the container gets less than its core in one cell and not
// the other — IRs of -0.57 and -0.41 were measured so with one core kept
// busy. Pinned to core 0, the container has its core in both cells
// whatever keeps the other core busy (the busy process moves to it); what
// else lands on core 0 now and then slows a trial of either cell and
// widens the interval.
//
// Asserted on the 99.9% interval of the IR computed from the stored
// trials: it meets -0.5 ± 0.03 (half is exact in expectation by symmetry
// — the target and the neighbour run the same code on the agent's one Go
// P, 10 ms at a time — up to a systematic share of a few percent the
// measurements cannot rule out: runs' rate ratios came out at 0.50-0.51);
// and it holds the report's IR, computed from the same trials.
//
// That the interval lies below 0 (the effect's sign) is logged, not
// asserted: it is a matter of power, and a make test with a core kept
// busy saw an interval of [-0.73, 0.07] at a coefficient of variation of
// 18% — a value a real measurement takes. Whenever the interval is narrow
// (its log-ratio half-width under 0.31) the sign follows from the truth
// inside it, so asserting it apart would add only failures of power.
// Chance failure on a quiet machine: 0.1% (one 99.9% interval).
func TestInterferenceKnownEffect(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[irRow](t, `name: e2e-known-effect
seed: 10
repetitions: 5
factors:
  platform: [docker]
  cpuset: ["0"]
  neighbour: [cpu]
  packaging: [same-container]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000, threads: 1}}
`)
	for _, x := range rows {
		if x.Cell["neighbour"] != "cpu" || x.Metric != "events_per_sec" {
			continue
		}
		if x.IR == nil {
			t.Fatal("no IR")
		}
		alone, beside := irSamples(t, db, x.Campaign, "cpu")
		_, ratio := ratioInterval(t, beside, alone, confidence)
		iv := ratio.shift(-1)
		t.Logf("IR beside a CPU-bound neighbour on one core: report %.4f, 99.9%% interval %v (alone %v, beside %v)", *x.IR, iv, alone, beside)
		if iv.hi < 0 {
			t.Logf("the effect's sign is resolved: the interval lies below 0")
		} else {
			t.Logf("NOT CHECKED: the effect's sign — the trials' coefficient of variation is %.0f%%, too noisy for 5 repetitions to exclude 0; the truth inside the interval is still asserted", 100*maxCV(alone, beside))
		}
		if !iv.meets(-0.5-knownIRSlack, -0.5+knownIRSlack) {
			t.Errorf("IR 99.9%% interval %v misses -0.5 ± %.2f", iv, knownIRSlack)
		}
		if !iv.contains(*x.IR) {
			t.Errorf("the report's IR %.4f is outside the 99.9%% interval %v of its own trials", *x.IR, iv)
		}
		return
	}
	t.Fatalf("no row for the target beside its neighbour: %+v", rows)
}

// maxCV is the larger of the samples' coefficients of variation.
func maxCV(samples ...[]float64) float64 {
	out := 0.0
	for _, xs := range samples {
		m, sd := meanSD(xs)
		out = max(out, sd/m)
	}
	return out
}

// knownIRSlack is how exactly a core shared with one equal neighbour
// halves the target's rate (TestInterferenceKnownEffect).
const knownIRSlack = 0.03

// irSamples reads the target's events_per_sec in each unflagged trial of a
// co-location campaign (a trial whose neighbour covered too little of the
// target's window is flagged and set apart): alone, and beside the
// neighbour named neighbour.
func irSamples(t *testing.T, db, campaign, neighbour string) (alone, beside []float64) {
	t.Helper()
	trials := storedTrials(t, db, campaign)
	cells := cellFactors(t, db, campaign)
	alone = values(t, usable(t, trials, cellOf(t, cells, map[string]string{"neighbour": "none"})), "events_per_sec")
	beside = values(t, usable(t, trials, cellOf(t, cells, map[string]string{"neighbour": neighbour})), "events_per_sec")
	return alone, beside
}
