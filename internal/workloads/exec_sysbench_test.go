package workloads_test

// The exec kind lives in package userkinds, which imports this one; its
// test against ctrbench's own sysbench parser is an external test here,
// where that parser is (export_test.go). Importing userkinds also
// registers exec and service in this test binary, so the tests that walk
// the registry (docs, units, estimates, parameters resolved again) cover
// them too.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	_ "github.com/ctrbench/ctrbench/internal/userkinds"
	"github.com/ctrbench/ctrbench/internal/workload"
	"github.com/ctrbench/ctrbench/internal/workload/workloadtest"
	"github.com/ctrbench/ctrbench/internal/workloads"
)

// A real tool nobody here wrote, through exec: sysbench's own text read by
// regular expressions. Its output is kept in a file beside the run, and
// ctrbench's sysbench parser reads the same text: the two agree exactly.
func TestExecReadsSysbench(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench not installed (scripts/setup.sh installs it)")
	}
	work := t.TempDir()
	p := workloadtest.Values(t, "exec", map[string]string{
		"command": `["sh","-c","sysbench cpu --cpu-max-prime=5000 --time=1 --events=0 --percentile=95 --histogram=on run > out.txt; cat out.txt"]`,
		"workdir": work,
		"format":  "regex",
		"metrics": `{"eps":{"pattern":"events per second:\\s+(?P<value>[0-9.]+)","unit":"events/s","better":"higher"},` +
			`"events":{"pattern":"total number of events:\\s+(?P<value>[0-9]+)","unit":"events","better":"higher"}}`,
	})
	exec, _ := workload.Lookup("exec")
	obs, raw, err := exec.Run[workload.Main](context.Background(), p, workloadtest.ToolEnv(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	got := workloadtest.ObsMap(obs)
	if len(obs) != 3 || obs[0].Metric != "eps" || obs[1].Metric != "events" || obs[2].Metric != "wall_time" {
		t.Fatalf("observations %+v: want eps, events, then wall_time", obs)
	}
	text, err := os.ReadFile(filepath.Join(work, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := workloads.ParseSysbenchCPU(string(text), 5000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := ref[0].Value; ref[0].Metric != "events_per_sec" || got["eps"] != want {
		t.Errorf("exec read %v events/s, sysbench printed %v", got["eps"], want)
	}
	if w := got["wall_time"]; w < 1 || w > 30 {
		t.Errorf("wall time %v s for a 1 s sysbench run", w)
	}
}
