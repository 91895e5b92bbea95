package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// gateRun is one stored campaign of the experiment the gate tests
// compare: workload tcp (net.tcp_stream), 6 trials of each cell.
type gateRun struct {
	id     string
	cells  []map[string]string             // each cell's factors
	mean   func(map[string]string) float64 // a cell's mean throughput, Gbit/s
	cv     float64                         // the trials' coefficient of variation
	load   string                          // the 1-minute load average at its start
	metric string                          // "" for throughput
}

// platforms are the cells of the experiment as its file has them:
// platform native and docker, with the extra factors given.
func platforms(extra map[string]string) []map[string]string {
	var out []map[string]string
	for _, p := range []string{"native", "docker"} {
		f := map[string]string{"platform": p}
		for k, v := range extra {
			f[k] = v
		}
		out = append(out, f)
	}
	return out
}

// gateDB stores the runs, one after the other, in one results file with
// seeded normal noise, and returns its path.
func gateDB(t *testing.T, runs ...gateRun) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(39, 2))
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, r := range runs {
		var cells []result.Cell
		for _, f := range r.cells {
			cells = append(cells, result.Cell{ID: len(cells) + 1, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: f, Params: map[string]string{}})
		}
		metric := r.metric
		if metric == "" {
			metric = "throughput"
		}
		camp := result.Campaign{ID: r.id, Name: "gate", SpecPath: "gate.yaml", SpecText: "name: gate\n", Status: result.CampaignDone,
			Started: t0.Add(time.Duration(i) * time.Hour), Ended: t0.Add(time.Duration(i)*time.Hour + time.Minute),
			Env: map[string]string{result.EnvKernel: "6.1", result.EnvHostname: "h", result.EnvLoadAvg1: r.load}}
		storeCampaign(t, db, camp, cells, 6, func(c result.Cell) result.Observation {
			return result.Observation{Metric: metric, Value: r.mean(c.Factors) * (1 + r.cv*rng.NormFloat64()), Unit: "Gbit/s", Better: result.Higher}
		})
	}
	return path
}

// compareRun runs `ctrbench compare` with args and returns its exit
// status, standard output and standard error.
func compareRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("GITHUB_STEP_SUMMARY", "")
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"compare"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func constant(v float64) func(map[string]string) float64 {
	return func(map[string]string) float64 { return v }
}

// Issue 39: the same file run on a machine twice as busy — every cell's
// throughput halved, and noisier (6% against 2%) — fails the gate: both
// cells regressed, exit 1; the load at each start is shown, not judged.
func TestCompareBusyMachineRegresses(t *testing.T) {
	path := gateDB(t,
		gateRun{id: "quiet", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "1.02"},
		gateRun{id: "busy", cells: platforms(nil), mean: constant(8.5), cv: 0.06, load: "2.04"})
	code, out, stderr := compareRun(t, "quiet", "busy", "--db", path)
	if code != ExitError || !strings.Contains(stderr, "2 metric(s) of busy regressed beyond ±1% against quiet") {
		t.Fatalf("exit %d, want %d (regressed):\n%s%s", code, ExitError, out, stderr)
	}
	if n := strings.Count(out, "regressed\n"); n != 2 {
		t.Errorf("%d cells regressed, want both:\n%s", n, out)
	}
	if !strings.Contains(out, `load.avg1 A "1.02", B "2.04"`) || strings.Contains(out, "settings differ") {
		t.Errorf("the start's load is not shown, or a setting is:\n%s", out)
	}
}

// Issue 39: the same file run with --set 'factors.cpus=[0.5]' is matched
// cell by cell on platform, with the setting shown above the table; the
// exit status is the verdicts' — 1 where docker lost 40% under the
// limit, 0 against a run with cpus=2 that changed nothing.
func TestCompareSettingDifference(t *testing.T) {
	limited := func(f map[string]string) float64 {
		if f["platform"] == "docker" {
			return 17 * 0.6
		}
		return 17
	}
	path := gateDB(t,
		gateRun{id: "base", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1"},
		gateRun{id: "half", cells: platforms(map[string]string{"cpus": "0.5"}), mean: limited, cv: 0.02, load: "0.1"},
		gateRun{id: "roomy", cells: platforms(map[string]string{"cpus": "2"}), mean: constant(17), cv: 0.02, load: "0.1"})
	code, out, stderr := compareRun(t, "base", "half", "--db", path)
	if code != ExitError {
		t.Fatalf("base against half: exit %d, want %d (docker regressed):\n%s%s", code, ExitError, out, stderr)
	}
	for _, want := range []string{"settings differ", `  cpus: A (not a factor), B "0.5" (workload tcp)`, "judged: each workload's headline metric, 2 change(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("base against half lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "only in") || strings.Count(out, "regressed\n") != 1 || strings.Count(out, "no change\n") != 1 {
		t.Errorf("base against half: not one regressed and one unchanged cell, matched on platform:\n%s", out)
	}
	code, out, stderr = compareRun(t, "base", "roomy", "--db", path)
	if code != ExitOK || !strings.Contains(out, `cpus: A (not a factor), B "2"`) || strings.Count(out, "no change\n") != 2 {
		t.Errorf("base against roomy: exit %d, want %d with both cells unchanged:\n%s%s", code, ExitOK, out, stderr)
	}
	code, out, stderr = compareRun(t, "roomy", "half", "--db", path, "--format", "json")
	var js struct {
		Settings []struct {
			Factor, A, B string
			Workloads    []string
		} `json:"settings_differences"`
		Changes []struct{ Cell map[string]string }
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != ExitError {
		t.Fatalf("roomy against half, json: exit %d, %v:\n%s%s", code, err, out, stderr)
	}
	if len(js.Settings) != 1 || js.Settings[0].Factor != "cpus" || js.Settings[0].A != "2" || js.Settings[0].B != "0.5" ||
		len(js.Changes) != 2 || len(js.Changes[0].Cell) != 1 {
		t.Errorf("roomy against half, json: settings %+v, changes %+v", js.Settings, js.Changes)
	}
}

// --strict-design refuses campaigns whose settings differ (exit 2, the
// settings in the message, nothing on standard output).
func TestCompareStrictDesign(t *testing.T) {
	path := gateDB(t,
		gateRun{id: "base", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1"},
		gateRun{id: "half", cells: platforms(map[string]string{"cpus": "0.5"}), mean: constant(17), cv: 0.02, load: "0.1"})
	code, out, stderr := compareRun(t, "base", "half", "--db", path, "--strict-design")
	want := `--strict-design: base and half ran with different settings (cpus: A (not a factor), B "0.5" (workload tcp))`
	if code != ExitInvalidInput || !strings.Contains(stderr, want) || out != "" {
		t.Errorf("exit %d, want %d and %q:\n%s%s", code, ExitInvalidInput, want, out, stderr)
	}
	if code, _, stderr := compareRun(t, "base", "base", "--db", path, "--strict-design"); code != ExitOK {
		t.Errorf("a campaign against itself with --strict-design: exit %d: %s", code, stderr)
	}
}

// Issue 39: a gate never passes on nothing. B swept cpus over two levels,
// which A never set: no cell in common, so nothing was judged — exit 2
// saying what each ran, in every format; a JUnit suite with an error, a
// summary with a cross.
func TestCompareNothingInCommon(t *testing.T) {
	var sweep []map[string]string
	for _, c := range []string{"0.5", "1"} {
		sweep = append(sweep, platforms(map[string]string{"cpus": c})...)
	}
	path := gateDB(t,
		gateRun{id: "base", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1"},
		gateRun{id: "sweep", cells: sweep, mean: constant(17), cv: 0.02, load: "0.1"})
	want := "no cells in common, so nothing was judged: A base ran tcp (2 cells: platform=native|docker); B sweep ran tcp (4 cells: platform=native|docker cpus=0.5|1)"
	code, out, stderr := compareRun(t, "base", "sweep", "--db", path)
	if code != ExitInvalidInput || !strings.Contains(stderr, want) || !strings.Contains(out, "only in B: tcp cpus=0.5 platform=docker") {
		t.Errorf("table: exit %d, want %d and %q:\n%s%s", code, ExitInvalidInput, want, out, stderr)
	}
	code, out, stderr = compareRun(t, "base", "sweep", "--db", path, "--format", "json")
	var js struct {
		Judged int      `json:"judged"`
		OnlyA  []string `json:"only_a"`
		OnlyB  []string `json:"only_b"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != ExitInvalidInput || js.Judged != 0 || len(js.OnlyA) != 2 || len(js.OnlyB) != 4 {
		t.Errorf("json: exit %d, %v, %+v:\n%s%s", code, err, js, out, stderr)
	}
	code, out, _ = compareRun(t, "base", "sweep", "--db", path, "--format", "junit")
	var x struct {
		Tests  int `xml:"tests,attr"`
		Errors int `xml:"errors,attr"`
		Cases  []struct {
			Name  string `xml:"name,attr"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal([]byte(out), &x); err != nil || code != ExitInvalidInput || x.Tests != 1 || x.Errors != 1 ||
		len(x.Cases) != 1 || x.Cases[0].Error == nil || !strings.Contains(x.Cases[0].Error.Message, want) {
		t.Errorf("junit: exit %d, %v, %+v:\n%s", code, err, x, out)
	}
	sum := filepath.Join(t.TempDir(), "summary.md")
	if code, _, _ = compareRun(t, "base", "sweep", "--db", path, "--summary", sum); code != ExitInvalidInput {
		t.Errorf("--summary: exit %d", code)
	}
	if b, err := os.ReadFile(sum); err != nil || !strings.Contains(string(b), ":x: "+want) {
		t.Errorf("the summary lacks the cross and %q (%v):\n%s", want, err, b)
	}
}

// Cells in common without a metric of the family in common (B's
// throughput renamed) judge nothing either: exit 2.
func TestCompareNoMetricInCommon(t *testing.T) {
	path := gateDB(t,
		gateRun{id: "old", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1"},
		gateRun{id: "renamed", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1", metric: "goodput"})
	code, out, stderr := compareRun(t, "old", "renamed", "--db", path)
	want := "nothing was judged: the 2 cell(s) both ran have no metric of the family in common (each workload's headline metric)"
	if code != ExitInvalidInput || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d and %q:\n%s%s", code, ExitInvalidInput, want, out, stderr)
	}
}

// junitparser (python3-junitparser) reads the JUnit XML of a comparison
// that judged nothing as a suite with one error and no case passed, so a
// CI's test view does not show the gate as green.
func TestJUnitParserNothingJudged(t *testing.T) {
	const parse = `
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
out = []
for suite in xml:
    for case in suite:
        out.append({"errors": suite.errors, "passed": case.is_passed, "results": [type(r).__name__ for r in case.result]})
print(json.dumps(out))
`
	requireReader(t, "junitparser", "python3-junitparser")
	path := gateDB(t,
		gateRun{id: "base", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1"},
		gateRun{id: "renamed", cells: platforms(nil), mean: constant(17), cv: 0.02, load: "0.1", metric: "goodput"})
	code, out, stderr := compareRun(t, "base", "renamed", "--db", path, "--format", "junit")
	if code != ExitInvalidInput {
		t.Fatalf("exit %d, want %d:\n%s%s", code, ExitInvalidInput, out, stderr)
	}
	file := filepath.Join(t.TempDir(), "compare.xml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Errors  int      `json:"errors"`
		Passed  bool     `json:"passed"`
		Results []string `json:"results"`
	}
	res := readWith(t, parse, file)
	if err := json.Unmarshal(res, &cases); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
	if len(cases) != 1 || cases[0].Errors != 1 || cases[0].Passed || len(cases[0].Results) != 1 || cases[0].Results[0] != "Error" {
		t.Errorf("junitparser read %s, want one case in error, not passed", res)
	}
}
