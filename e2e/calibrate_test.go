package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCalibrate (issue 24): `ctrbench calibrate` on the real engine runs
// the baseline cell A/A, five pairs of blocks of the experiment's n by
// default, and gives per metric the false-positive rate of consecutive
// blocks in run order with its exact interval and the MDE at 80% power;
// a later campaign of the experiment on this machine is judged against it
// (every comparison carries the MDE). What is asserted is what the
// instrument promises, not the machine's noise: the counts, the interval
// holding its rate inside [0, 1], the MDE positive and finite.
func TestCalibrate(t *testing.T) {
	requireDocker(t)
	const exp = `name: e2e-calibrate
seed: 5
repetitions: 3
factors:
  platform: [native, docker]
baseline: {platform: native}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 200ms, max_prime: 2000, threads: 1}}
`
	file := writeExperiment(t, exp)
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 5*time.Minute, "calibrate", file, "--db", db, "--format", "json")
	if r.code != 0 {
		t.Fatalf("calibrate exited %d\n%s", r.code, r.stderr)
	}
	var cal struct {
		Floors []struct {
			Metric      string      `json:"metric"`
			N           int         `json:"n"`
			FPR         *float64    `json:"false_positive_rate"`
			FPRCI95     [2]*float64 `json:"false_positive_ci95"`
			Block       int         `json:"false_positive_block"`
			Compared    int         `json:"false_positive_comparisons"`
			Significant int         `json:"false_positive_significant"`
			MDE         *float64    `json:"mde_pct"`
		} `json:"floors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cal); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	found := false
	for _, f := range cal.Floors {
		if f.Metric != "events_per_sec" {
			continue
		}
		found = true
		t.Logf("events_per_sec: n %d a side, %d of %d block comparisons significant, [%v, %v], MDE %v%%", f.N, f.Significant, f.Compared, *f.FPRCI95[0], *f.FPRCI95[1], *f.MDE)
		if f.N != 15 || f.Block != 3 || f.Compared != 5 || f.FPR == nil || f.FPRCI95[0] == nil || f.FPRCI95[1] == nil {
			t.Errorf("floor %+v: want 15 trials a side, 5 comparisons of blocks of 3", f)
			continue
		}
		if lo, hi := *f.FPRCI95[0], *f.FPRCI95[1]; lo < 0 || hi > 1 || lo > *f.FPR || *f.FPR > hi {
			t.Errorf("false-positive rate %v outside its interval [%v, %v]", *f.FPR, lo, hi)
		}
		if f.MDE == nil || !(*f.MDE > 0) {
			t.Errorf("MDE %v", f.MDE)
		}
	}
	if !found {
		t.Fatalf("no floor for events_per_sec: %s", r.stdout)
	}
	table := ctrbench(t, time.Minute, "calibrate", file, "--db", db, "--repetitions", "2")
	if table.code != 0 || !strings.Contains(table.stdout, "false positives (blocks of 3)") {
		t.Errorf("calibrate table (exit %d):\n%s%s", table.code, table.stdout, table.stderr)
	}
	// The experiment on the same machine is judged against the newest
	// calibration: its comparison carries the MDE.
	run := ctrbench(t, 5*time.Minute, "run", file, "--db", db, "--format", "json")
	if run.code != 0 {
		t.Fatalf("run exited %d\n%s", run.code, run.stderr)
	}
	assertNothingLeft(t, campaignID(t, run.stderr))
	var rows []struct {
		Metric string            `json:"metric"`
		Cell   map[string]string `json:"cell"`
		MDE    *float64          `json:"mde_pct"`
	}
	if err := json.Unmarshal([]byte(run.stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, run.stdout)
	}
	for _, x := range rows {
		if x.Metric == "events_per_sec" && x.Cell["platform"] == "docker" && (x.MDE == nil || !(*x.MDE > 0)) {
			t.Errorf("docker's comparison has no MDE from the calibration: %+v", x)
		}
	}
}
