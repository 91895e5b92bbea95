package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 28's done-when: five campaigns of the quickstart (shortened:
// host network only, 3 trials of 1 s after a warm-up), the fifth on a
// machine of a quarter of a CPU (--set machine.cpus=0.25). history finds the change at the fifth run
// and no other (at alpha 1%: a history without a change shows one at most
// 1% of the time), marks the experiment file's change there, and
// --fail-on-change fails on it.
func TestHistoryOfFiveQuickstarts(t *testing.T) {
	requireDocker(t)
	db := filepath.Join(t.TempDir(), "r.db")
	short := []string{"--db", db, "--no-report", "--set", "repetitions=3", "--set", "warmup=1", "--set", "factors.network=[host]", "--set", "exclude=[]",
		"--set", "workloads.cpu.params.duration=1s", "--set", "workloads.tcp.params.duration=1s"}
	var ids []string
	for i := 1; i <= 5; i++ {
		args := append([]string{"run", "../experiments/quickstart.yaml"}, short...)
		if i == 5 {
			args = append(args, "--set", "machine.cpus=0.25")
		}
		r := ctrbench(t, 5*time.Minute, args...)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, r.code, r.stderr)
		}
		ids = append(ids, campaignID(t, r.stderr))
		assertNothingLeft(t, ids[i-1])
	}
	r := ctrbench(t, time.Minute, "history", "quickstart", "--db", db, "--alpha", "0.01", "--format", "json")
	if r.code != 0 {
		t.Fatalf("history: exit %d\n%s", r.code, r.stderr)
	}
	var h struct {
		Runs []struct {
			Campaign string
			Changes  []struct{ Key string }
		}
		Series []struct {
			Workload     string
			Cell         map[string]string
			Changepoints []struct {
				Run       int
				ChangePct float64 `json:"change_pct"`
				Verdict   string
			}
		}
		ChangedRuns []int `json:"changed_runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatal(err)
	}
	table := ctrbench(t, time.Minute, "history", "quickstart", "--db", db, "--alpha", "0.01")
	t.Logf("\n%s", table.stdout)
	if len(h.Runs) != 5 || h.Runs[4].Campaign != ids[4] {
		t.Fatalf("runs %+v, want %v", h.Runs, ids)
	}
	if len(h.ChangedRuns) != 1 || h.ChangedRuns[0] != 5 {
		t.Errorf("changed runs %v, want [5]", h.ChangedRuns)
	}
	for _, s := range h.Series {
		for _, c := range s.Changepoints {
			if c.Verdict != "regressed" || c.ChangePct > -20 {
				t.Errorf("%s %v: %+v: a quarter of a CPU should make it slower", s.Workload, s.Cell, c)
			}
		}
	}
	if len(h.Runs[4].Changes) == 0 || h.Runs[4].Changes[0].Key != "experiment file" {
		t.Errorf("run 5's changes %+v: the file's --set is not marked", h.Runs[4].Changes)
	}
	for i := 1; i < 4; i++ {
		for _, c := range h.Runs[i].Changes {
			if c.Key == "experiment file" {
				t.Errorf("run %d marked as a change of the file", i+1)
			}
		}
	}
	fail := ctrbench(t, time.Minute, "history", "quickstart", "--db", db, "--alpha", "0.01", "--fail-on-change")
	if fail.code != 1 || !strings.Contains(fail.stderr, "regressed at the newest run ("+ids[4]+")") {
		t.Errorf("--fail-on-change: exit %d: %s", fail.code, fail.stderr)
	}
}
