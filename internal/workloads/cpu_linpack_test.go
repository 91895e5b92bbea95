package workloads

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// useKernels puts the repository's bin/ (where `make build` leaves the C
// kernels) first in PATH: a test binary is not bin/ctrbench, so lookTool
// cannot find them beside it. Skips when the kernel is not built.
func useKernels(t *testing.T, kernel string) {
	t.Helper()
	dir := filepath.Join(testutil.ModuleRoot(), "bin")
	if st, err := os.Stat(filepath.Join(dir, kernel)); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Skipf("%s not built (run `make build`)", filepath.Join("bin", kernel))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// corrupting makes the kernels spoil their answers for the rest of the test.
func corrupting(t *testing.T) {
	corruptResults = true
	t.Cleanup(func() { corruptResults = false })
}

// posingAsMachine makes the memory guard see avail bytes, and no kernel
// findable, so a guard that lets a trial through shows as "not found".
func posingAsMachine(t *testing.T, avail int64) {
	old := memAvailable
	memAvailable = func() (int64, string, error) { return avail, "the cgroup memory limit", nil }
	t.Cleanup(func() { memAvailable = old })
	t.Setenv("PATH", t.TempDir())
}

func TestParseLinpack(t *testing.T) {
	good := `{"n":1000,"threads":2,"repeat":3,"seconds":0.05,"seconds_mean":0.0625,"gflops":13.4,"gflops_mean":10.72,"residual":6.4e-13,"scaled_residual":0.003}` + "\n"
	obs, _, err := parseLinpack([]byte(good), good, nil, 1000, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m := obsMap(obs); m["gflops"] != 13.4 || m["gflops_mean"] != 10.72 || m["seconds"] != 0.05 || m["scaled_residual"] != 0.003 {
		t.Errorf("metrics %v", m)
	}
	exit3 := errors.New("ctb-linpack: exit status 3: ctb-linpack: residual check failed")
	for name, c := range map[string]struct {
		out    string
		runErr error
		want   string
	}{
		"bad residual":       {strings.Replace(good, `"scaled_residual":0.003`, `"scaled_residual":6.8e10`, 1), exit3, "residual check failed: scaled residual 6.8e+10 is not below 16"},
		"residual just at":   {strings.Replace(good, `"scaled_residual":0.003`, `"scaled_residual":16`, 1), nil, "residual check failed"},
		"non-finite":         {strings.Replace(good, `"scaled_residual":0.003`, `"scaled_residual":null`, 1), exit3, "residual check failed: ctb-linpack reported no finite scaled residual"},
		"no residual":        {`{"n":1000,"threads":2,"seconds":0.05,"gflops":13.4}`, nil, "residual check failed"},
		"not json":           {"Segmentation fault\n", nil, "not the JSON expected"},
		"not json, exit":     {"", errors.New("ctb-linpack: exit status 1: cannot allocate 8000000000 bytes"), "cannot allocate"},
		"other problem":      {strings.Replace(good, `"n":1000`, `"n":999`, 1), nil, "different problem"},
		"zero time":          {strings.Replace(good, `"seconds":0.05`, `"seconds":0`, 1), nil, "no positive finite seconds"},
		"exit after good ok": {good, errors.New("ctb-linpack: signal: killed"), "killed"},
	} {
		_, raw, err := parseLinpack([]byte(c.out), c.out, c.runErr, 1000, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
		if raw != c.out {
			t.Errorf("%s: raw output not kept", name)
		}
	}
}

func TestLinpackRuns(t *testing.T) {
	useKernels(t, "ctb-linpack")
	p := values(t, "cpu.linpack", map[string]string{"n": "200", "repeat": "3"})
	obs, raw, err := runLinpack(context.Background(), p, workload.Env{})
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	m := obsMap(obs)
	if m["gflops"] <= 0 || m["gflops_mean"] <= 0 || m["gflops_mean"] > m["gflops"]*1.000001 {
		t.Errorf("implausible GFLOPS %v", m)
	}
	if m["scaled_residual"] <= 0 || m["scaled_residual"] >= 16 {
		t.Errorf("scaled residual %v", m["scaled_residual"])
	}
	// The best time and the best rate describe the same solve.
	const flops = 2.0/3*200*200*200 + 2*200*200
	if r := flops / m["seconds"] / 1e9 / m["gflops"]; r < 0.999 || r > 1.001 {
		t.Errorf("gflops %v disagrees with seconds %v", m["gflops"], m["seconds"])
	}
}

func TestLinpackTwoThreads(t *testing.T) {
	useKernels(t, "ctb-linpack")
	p := values(t, "cpu.linpack", map[string]string{"n": "300", "threads": "2"})
	if obs, raw, err := runLinpack(context.Background(), p, workload.Env{}); err != nil || obsMap(obs)["gflops"] <= 0 {
		t.Fatalf("%v %v\n%s", obs, err, raw)
	}
}

// A wrong solution must fail the trial: proves the residual check works.
func TestLinpackDetectsWrongAnswer(t *testing.T) {
	useKernels(t, "ctb-linpack")
	corrupting(t)
	p := values(t, "cpu.linpack", map[string]string{"n": "200"})
	obs, raw, err := runLinpack(context.Background(), p, workload.Env{})
	if err == nil || !strings.Contains(err.Error(), "residual check failed") {
		t.Fatalf("want a failed residual check, got %v (%v)", err, obs)
	}
	if !strings.Contains(raw, `"scaled_residual"`) {
		t.Errorf("raw output not kept: %q", raw)
	}
}

func TestLinpackMemoryGuard(t *testing.T) {
	posingAsMachine(t, 2<<30) // S0's Case 1 container: 2 GB
	p := values(t, "cpu.linpack", map[string]string{"n": "60000"})
	_, _, err := runLinpack(context.Background(), p, workload.Env{})
	if err == nil || !strings.Contains(err.Error(), "cpu.linpack n=60000 needs 28.80 GB") || !strings.Contains(err.Error(), "cgroup memory limit") {
		t.Fatalf("want the memory guard's error, got %v", err)
	}
	// n=300 fits in 2 GB: the guard passes and the (hidden) kernel is missing.
	p = values(t, "cpu.linpack", map[string]string{"n": "300"})
	if _, _, err := runLinpack(context.Background(), p, workload.Env{}); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("want the missing kernel, got %v", err)
	}
}

// The guard on this machine, with its real memory figures.
func TestLinpackMemoryGuardHere(t *testing.T) {
	avail, src, err := memAvailable()
	if err != nil {
		t.Fatal(err)
	}
	if avail <= 0 {
		t.Fatalf("available memory %d from %s", avail, src)
	}
	if linpackMemory(60000) <= avail/10*8 {
		t.Skipf("this machine has %.0f GB available (%s): n=60000 fits", float64(avail)/1e9, src)
	}
	t.Setenv("PATH", t.TempDir())
	p := values(t, "cpu.linpack", map[string]string{"n": "60000"})
	if _, _, err := runLinpack(context.Background(), p, workload.Env{}); err == nil || !strings.Contains(err.Error(), "needs 28.80 GB") {
		t.Fatalf("want the memory guard's error, got %v", err)
	}
}

func TestMeminfoAvailable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(f, []byte("MemTotal:       24558436 kB\nMemFree:        23000000 kB\nMemAvailable:   23860192 kB\n"), 0o644)
	if got, err := meminfoAvailable(f); err != nil || got != 23860192*1024 {
		t.Errorf("got %d, %v", got, err)
	}
	os.WriteFile(f, []byte("MemTotal:       24558436 kB\n"), 0o644)
	if _, err := meminfoAvailable(f); err == nil || !strings.Contains(err.Error(), "no MemAvailable") {
		t.Errorf("got %v", err)
	}
}
