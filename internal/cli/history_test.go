package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/browser"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// fiveRuns stores five campaigns of one experiment, two workloads in
// cells native and docker, 6 trials each at ±1%; in the fifth the file
// gained a --set and the docker cells run at half speed, and the
// governor changed. It returns the results file.
func fiveRuns(t *testing.T) string {
	t.Helper()
	return fiveRunsWith(t, func(env map[string]string) { env[result.EnvGovernor] = "powersave" })
}

// fiveRunsWith is fiveRuns with the fifth run's environment changed by
// change.
func fiveRunsWith(t *testing.T, change func(env map[string]string)) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(28, 5))
	var cells []result.Cell
	for _, w := range []string{"cpu", "tcp"} {
		for _, p := range []string{"native", "docker"} {
			cells = append(cells, result.Cell{ID: len(cells) + 1, Workload: w, WorkloadType: map[string]string{"cpu": "cpu.primes", "tcp": "net.tcp_stream"}[w],
				Factors: map[string]string{"platform": p}, Params: map[string]string{}})
		}
	}
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for run := 1; run <= 5; run++ {
		id := "run" + string(rune('0'+run))
		camp := result.Campaign{ID: id, Name: "quickstart", SpecPath: "quickstart.yaml", SpecText: "name: quickstart\n", Status: result.CampaignDone,
			Started: t0.Add(time.Duration(run) * time.Hour), Ended: t0.Add(time.Duration(run)*time.Hour + time.Minute),
			Env: map[string]string{result.EnvKernel: "6.1", result.EnvHostname: "h", result.EnvGovernor: "performance"}}
		camp.Env[result.EnvDocker] = "20.10.24+dfsg1"
		if run == 5 {
			camp.SpecText += "# --set machine.cpus=1\n"
			change(camp.Env)
		}
		storeCampaign(t, db, camp, cells, 6, func(c result.Cell) result.Observation {
			mean := map[string]float64{"cpu": 1000, "tcp": 17}[c.Workload]
			if run == 5 && c.Factors["platform"] == "docker" {
				mean /= 2
			}
			unit := map[string]string{"cpu": "events/s", "tcp": "Gbit/s"}[c.Workload]
			return result.Observation{Metric: "throughput", Value: mean * (1 + 0.01*rng.NormFloat64()), Unit: unit, Better: result.Higher}
		})
	}
	return path
}

// The engine changed at the run where the docker series changed (Docker
// 20.10.24 to 28.2.2, as the project's machines moved): history marks each
// changepoint with it as the likely cause, and compare says so above its
// table.
func TestEngineChangeIsTheLikelyCause(t *testing.T) {
	ctx := context.Background()
	path := fiveRunsWith(t, func(env map[string]string) {
		env[result.EnvDocker], env[result.EnvContainerd] = "28.2.2", "1.6.20~ds1"
	})
	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"history", "--db", path, "quickstart"}, &out, &errOut); code != 0 {
		t.Fatalf("history: exit %d: %s", code, errOut.String())
	}
	want := "likely cause: the engine changed (docker.version 20.10.24+dfsg1 → 28.2.2, containerd.version (none) → 1.6.20~ds1)"
	if n := strings.Count(out.String(), want); n != 2 {
		t.Errorf("%d changepoints say %q, want the 2 of the docker cells:\n%s", n, want, out.String())
	}
	out.Reset()
	errOut.Reset()
	code := Main(ctx, []string{"compare", "--db", path, "run4", "run5"}, &out, &errOut)
	if code != ExitError || !strings.Contains(out.String(), "likely cause of any change: the engine changed (docker.version 20.10.24+dfsg1 → 28.2.2, containerd.version") {
		t.Errorf("compare: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// history over five runs finds the change of the fifth in its docker
// series and nowhere else, marks the run's file and governor change, and
// says so in every format; --fail-on-change fails on it, and not with
// the history cut before it.
func TestHistoryFindsTheChange(t *testing.T) {
	ctx := context.Background()
	path := fiveRuns(t)
	run := func(args ...string) (string, int, string) {
		var out, errOut bytes.Buffer
		code := Main(ctx, append([]string{"history", "--db", path}, args...), &out, &errOut)
		return out.String(), code, errOut.String()
	}
	table, code, stderr := run("quickstart")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("\n%s", table)
	for _, want := range []string{"5 run(s), 4 series", "experiment file ", "cpu.governor performance → powersave", "runs where a series changed: 5 (run5)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	if n := strings.Count(table, "◆ regressed"); n != 2 {
		t.Errorf("%d regressions marked, want 2 (the docker cells)", n)
	}
	js, code, stderr := run("quickstart", "--format", "json")
	var h struct {
		Runs   []struct{ Changes []struct{ Key string } }
		Series []struct {
			Cell         map[string]string
			Workload     string
			Changepoints []struct {
				Run       int
				ChangePct float64 `json:"change_pct"`
				Verdict   string
			}
		}
		ChangedRuns []int `json:"changed_runs"`
	}
	if err := json.Unmarshal([]byte(js), &h); err != nil || code != 0 {
		t.Fatalf("json: exit %d %v: %s", code, err, stderr)
	}
	if len(h.ChangedRuns) != 1 || h.ChangedRuns[0] != 5 || len(h.Runs) != 5 || len(h.Runs[4].Changes) != 2 || len(h.Runs[3].Changes) != 0 {
		t.Errorf("changed runs %v, changes of runs 4 and 5: %v %v", h.ChangedRuns, h.Runs[3].Changes, h.Runs[4].Changes)
	}
	for _, s := range h.Series {
		docker := s.Cell["platform"] == "docker"
		if docker != (len(s.Changepoints) == 1) {
			t.Errorf("%s %v: changepoints %+v", s.Workload, s.Cell, s.Changepoints)
		}
		for _, c := range s.Changepoints {
			if c.Run != 5 || c.Verdict != "regressed" || c.ChangePct > -45 || c.ChangePct < -55 {
				t.Errorf("%s %v: %+v", s.Workload, s.Cell, c)
			}
		}
	}
	md, code, _ := run("quickstart", "--format", "markdown")
	if code != 0 || !strings.Contains(md, "| cpu | platform=docker | throughput [events/s] | 5 | run5 |") {
		t.Errorf("markdown: exit %d\n%s", code, md)
	}
	if _, code, stderr := run("quickstart", "--fail-on-change"); code != ExitError || !strings.Contains(stderr, "2 series of \"quickstart\" regressed at the newest run (run5)") {
		t.Errorf("--fail-on-change: exit %d: %s", code, stderr)
	}
	if out, code, stderr := run("quickstart", "--fail-on-change", "--until", "run4"); code != 0 || !strings.Contains(out, "runs where a series changed: none") {
		t.Errorf("--until run4 --fail-on-change: exit %d: %s%s", code, out, stderr)
	}
	for _, bad := range [][]string{{"nope"}, {"quickstart", "--format", "csv"}, {"quickstart", "--alpha", "2"}, {"quickstart", "--until", "zzz"}} {
		if _, code, stderr := run(bad...); code == 0 || stderr == "" {
			t.Errorf("%v: exit %d, %q", bad, code, stderr)
		}
	}
}

// The history's figures as Chromium draws them: in the HTML report of the
// newest run, one figure per workload, a line per cell over five runs, the
// changepoint drawn as a dashed line before run 5 in both figures, no
// console error, nothing fetched.
func TestHistoryInTheHTMLReport(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	path := fiveRuns(t)
	page := filepath.Join(t.TempDir(), "history.html")
	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"history", "quickstart", "--db", path, "--html", page}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(page); err != nil {
		t.Fatal(err)
	}
	const marks = `(function () {
  var out = [];
  document.querySelectorAll("#history line.changepoint").forEach(function (l) {
    var b = l.getBoundingClientRect();
    out.push(l.closest("figure").id + "@" + (b.height > 50 ? "drawn" : "flat") + ":" + l.querySelector("title").textContent);
  });
  return out.join("\n");
})()`
	const rows = `String(document.querySelectorAll("#history table.runs tbody tr").length) + " " + document.querySelector("#history table.runs tbody tr:last-child").innerText`
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rep, err := browser.Open(bctx, page, []int{1280}, marks, rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Console) > 0 {
		t.Errorf("console: %q", rep.Console)
	}
	for _, u := range rep.Requests {
		if !strings.HasSuffix(u, "/history.html") {
			t.Errorf("the page requested %q", u)
		}
	}
	var hist []string
	for _, f := range rep.Figures {
		if strings.HasPrefix(f.ID, "h-") {
			hist = append(hist, f.ID)
			if f.Series != 2 || f.Points != 10 || f.Outside != 0 {
				t.Errorf("figure %s: %d series, %d points (%d outside), want 2 and 10", f.ID, f.Series, f.Points, f.Outside)
			}
		}
	}
	if len(hist) != 2 {
		t.Errorf("history figures %v, want one per workload", hist)
	}
	lines := strings.Split(rep.Results[0], "\n")
	if len(lines) != 2 {
		t.Fatalf("changepoint lines: %q", rep.Results[0])
	}
	for _, l := range lines {
		if !strings.Contains(l, "@drawn:changepoint before run 5 (run5), platform=docker: regressed") {
			t.Errorf("changepoint line %q", l)
		}
	}
	if !strings.HasPrefix(rep.Results[1], "5 5\trun5") || !strings.Contains(rep.Results[1], "cpu.governor performance → powersave") || !strings.Contains(rep.Results[1], "2 series changed") {
		t.Errorf("runs table: %q", rep.Results[1])
	}
}
