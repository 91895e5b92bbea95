package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

const adaptiveExperiment = `name: e2e-adaptive
seed: 8
repetitions: {min: 5, max: 7, rci: RCI}
factors:
  param.max_prime: [2000, 3000]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 200ms}}
`

// eleventh is the progress line of the eleventh finished trial.
var eleventh = regexp.MustCompile(`\[11/\d+\] `)

// TestAdaptiveRepetition (issue 10, item 15): with a target every cell
// meets at the minimum (±95%), each stops there; with one no cell can meet
// (±0.0001%), each runs to the maximum — interrupted by Ctrl-C after the
// first stage (min trials of every cell) and resumed, it takes the
// decisions the stored trials call for, and neither loses nor repeats a
// trial. The report says which cell reached its target. Neither case
// depends on the stopping rule beyond this: a cell whose first stage is
// already as precise as asked needs no more trials, and one that can never
// be gets max.
//
// The first stage is 5 trials, not 3, so that "every cell meets ±95% at
// the minimum" holds under load: the 95% interval's half-width, t(0.975,
// n-1)·sd/(√n·mean), is within 95% of the mean while the trials'
// coefficient of variation is below 0.38 at n = 3 (t = 4.30) — 200 ms
// trials beside a busy core exceeded that, and a cell took a fourth trial
// — but below 0.77 at n = 5 (t = 2.78), which would take trials at a
// tenth and at the full rate in one cell. Chance failure on a quiet
// machine (coefficients of variation of 1-3%): nil.
func TestAdaptiveRepetition(t *testing.T) {
	for _, c := range []struct {
		rci       string
		n         int
		reached   bool
		interrupt bool
	}{
		{"95%", 5, true, false},
		{"0.0001%", 7, false, true},
	} {
		t.Run(c.rci, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "r.db")
			exp := writeExperiment(t, strings.Replace(adaptiveExperiment, "RCI", c.rci, 1))
			var id string
			if c.interrupt {
				cmd, stderr := startCtrbench(t, "run", exp, "--db", db, "--no-report")
				// After the first stage and one trial of the next: whatever
				// total the progress line counts towards.
				waitFor(t, "eleven finished trials", 3*time.Minute, func() bool { return eleventh.MatchString(stderr.String()) })
				id = campaignID(t, stderr.String())
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
				if code := exitCode(t, cmd, time.Minute); code != 1 {
					t.Fatalf("exit %d after Ctrl-C\n%s", code, stderr.String())
				}
				if r := ctrbench(t, 3*time.Minute, "run", "--db", db, "--resume", id, "--no-report"); r.code != 0 {
					t.Fatalf("resume exited %d\n%s", r.code, r.stderr)
				}
			} else {
				r := ctrbench(t, 3*time.Minute, "run", exp, "--db", db, "--no-report")
				if r.code != 0 {
					t.Fatalf("run exited %d\n%s", r.code, r.stderr)
				}
				id = campaignID(t, r.stderr)
			}
			trials := storedTrials(t, db, id)
			perCell, seen := map[int]int{}, map[int]bool{}
			for i, tr := range trials {
				if seen[tr.Seq] || tr.Seq != i+1 {
					t.Errorf("trial %d has seq %d (seen before: %v)", i, tr.Seq, seen[tr.Seq])
				}
				seen[tr.Seq] = true
				if tr.Status == result.OK {
					perCell[tr.CellID]++
				}
			}
			if len(perCell) != 2 || perCell[1] != c.n || perCell[2] != c.n {
				t.Errorf("ok trials per cell %v, want %d each", perCell, c.n)
			}
			rep := ctrbench(t, time.Minute, "report", "--db", db, "--campaign", id, "--format", "json")
			var rows []struct {
				Metric  string  `json:"metric"`
				N       int     `json:"n"`
				Target  float64 `json:"target_rci_pct"`
				Reached *bool   `json:"target_reached"`
			}
			if err := json.Unmarshal([]byte(rep.stdout), &rows); err != nil {
				t.Fatal(err)
			}
			decided := 0
			for _, x := range rows {
				if x.Reached == nil {
					continue
				}
				decided++
				if x.Metric != "events_per_sec" || x.N != c.n || *x.Reached != c.reached {
					t.Errorf("%+v reached %v, want n %d reached %v", x, *x.Reached, c.n, c.reached)
				}
			}
			if decided != 2 {
				t.Errorf("%d rows carry the target, want 2 (one per cell)", decided)
			}
			table := ctrbench(t, time.Minute, "report", "--db", db, "--campaign", id)
			contains(t, "table", table.stdout, "precision (target)")
		})
	}
}
