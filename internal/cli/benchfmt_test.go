package cli

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// benchstat, the Go project's own tool (go tool benchstat, from
// golang.org/x/perf), reads two campaigns' `report --format benchfmt`
// and reaches compare's verdict: in the cell where throughput fell by a
// fifth it reports the change as significant, and in the cell that did
// not change it reports none (~), as compare does.
func TestBenchstatReadsOurBenchfmt(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run benchstat")
	}
	ctx := context.Background()
	path := beforeAfter(t)
	dir := t.TempDir()
	var files []string
	for _, id := range []string{"before", "after"} {
		var out, errOut bytes.Buffer
		if code := Main(ctx, []string{"report", "--db", path, "--campaign", id, "--format", "benchfmt"}, &out, &errOut); code != 0 {
			t.Fatalf("report %s: exit %d: %s", id, code, errOut.String())
		}
		f := filepath.Join(dir, id+".txt")
		if err := os.WriteFile(f, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	cmd := exec.Command("go", append([]string{"tool", "benchstat"}, files...)...)
	cmd.Dir = "../.." // the module that names the tool
	bs, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, bs)
	}
	t.Logf("benchstat:\n%s", bs)
	// benchstat's lines for the two cells: "Tcp/platform=docker … -20.00% (p=… n=8)".
	line := func(cell string) string {
		for _, l := range strings.Split(string(bs), "\n") {
			if strings.Contains(l, cell) {
				return l
			}
		}
		t.Fatalf("benchstat printed no line for %s:\n%s", cell, bs)
		return ""
	}
	change := regexp.MustCompile(`([-+][0-9.]+)% \(p=([0-9.]+) n=8\)`)
	if m := change.FindStringSubmatch(line("platform=docker")); m == nil || !strings.HasPrefix(m[1], "-") {
		t.Errorf("benchstat saw no fall in docker's throughput: %q", line("platform=docker"))
	}
	if l := line("platform=native"); !strings.Contains(l, "~") {
		t.Errorf("benchstat saw a change where there is none: %q", l)
	}
	// compare's verdict on the same campaigns.
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"compare", "before", "after", "--db", path, "--threshold", "5%"}, &out, &errOut)
	if code != ExitError || !strings.Contains(out.String(), "regressed") {
		t.Errorf("compare: exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "platform=native") && strings.Contains(l, "regressed") {
			t.Errorf("compare judged the unchanged cell regressed: %q", l)
		}
	}
}

// beforeAfter stores two campaigns, before and after, of 8 trials in each
// of two cells: throughput 10 Gbit/s ±1% in both, except docker's after,
// which fell by a fifth. It returns the results file.
func beforeAfter(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cells := []result.Cell{
		{ID: 1, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": "native"}, Params: map[string]string{}},
		{ID: 2, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": "docker"}, Params: map[string]string{}},
	}
	for i, id := range []string{"before", "after"} {
		camp := result.Campaign{ID: id, Name: "bench", SpecPath: "bench.yaml", Status: "done", Started: time.Unix(int64(1e9+i), 0),
			Env: map[string]string{result.EnvKernel: "6.1", result.EnvHostname: "h"}}
		storeCampaign(t, db, camp, cells, 8, func(c result.Cell) result.Observation {
			mean := 10.0
			if id == "after" && c.ID == 2 {
				mean = 8 // docker's throughput fell by a fifth
			}
			return result.Observation{Metric: "throughput", Value: mean * (1 + 0.01*rng.NormFloat64()), Unit: "Gbit/s", Better: result.Higher}
		})
	}
	db.Close()
	return path
}

// storeCampaign stores campaign camp with its cells and reps rounds of
// one ok trial per cell, each observing what obs gives for its cell.
func storeCampaign(t *testing.T, db *store.DB, camp result.Campaign, cells []result.Cell, reps int, obs func(result.Cell) result.Observation) {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateCampaign(ctx, camp); err != nil {
		t.Fatal(err)
	}
	if err := db.AddCells(ctx, camp.ID, cells); err != nil {
		t.Fatal(err)
	}
	seq := 0
	for rep := 1; rep <= reps; rep++ {
		for _, c := range cells {
			seq++
			tr := result.Trial{CampaignID: camp.ID, CellID: c.ID, Seq: seq, Repetition: rep, Status: result.OK, Started: camp.Started, Ended: camp.Started,
				Observations: []result.Observation{obs(c)}}
			if _, err := db.RecordTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}
