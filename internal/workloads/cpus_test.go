package workloads

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// threads: auto is every CPU the instance may use: the CPUs of its
// affinity mask (a cpuset), capped by its cgroup's CPU quota rounded up;
// a number is taken as asked.
func TestLinpackThreads(t *testing.T) {
	for _, c := range []struct {
		threads string
		ncpu    int
		quota   float64
		want    int64
	}{
		{"auto", 2, 0, 2},   // S0's Cases 2 and 3a: no limits, both cores
		{"auto", 2, 1, 1},   // Cases 1 and 3b: --cpus 1
		{"auto", 8, 1.5, 2}, // a quota of 1.5 CPUs: 2 threads
		{"auto", 4, 0.5, 1}, // 0.5: one
		{"auto", 1, 0, 1},   // --cpuset 0: one CPU in the mask
		{"auto", 2, 8, 2},   // a quota above the CPUs: the CPUs
		{"1", 2, 0, 1},      // the default, whatever the instance may use
		{"4", 2, 1, 4},      // asked: as asked, oversubscribed
	} {
		p := values(t, "cpu.linpack", map[string]string{"threads": c.threads})
		if got := linpackThreads(p, c.ncpu, c.quota); got != c.want {
			t.Errorf("threads %s with %d CPUs, quota %v: %d, want %d", c.threads, c.ncpu, c.quota, got, c.want)
		}
	}
	s, _ := workload.Lookup("cpu.linpack")
	if _, errs := s.Resolve(map[string]string{"threads": "0"}); errs == nil || !strings.Contains(errs["threads"].Error(), "from 1 to 1024, or auto") {
		t.Errorf("threads 0: %v, want an error that offers auto", errs)
	}
}

// posingCgroup makes cgroup.Self read the files given (name → content)
// from a cgroup v2 root of the test's own.
func posingCgroup(t *testing.T, files map[string]string) {
	t.Helper()
	root := t.TempDir()
	files["cgroup.controllers"] = "cpu cpuset memory"
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := cgroup.Root
	cgroup.Root = root
	t.Cleanup(func() { cgroup.Root = old })
}

// The quota is read from the instance's cgroup as the kernel writes it.
func TestCPUsNowReadsTheQuota(t *testing.T) {
	for content, want := range map[string]float64{"150000 100000": 1.5, "50000 100000": 0.5, "max 100000": 0} {
		posingCgroup(t, map[string]string{"cpu.max": content})
		if _, quota := cpusNow(); quota != want {
			t.Errorf("cpu.max %q: quota %v, want %v", content, quota, want)
		}
	}
}

// A trial with threads: auto under a quota of half a CPU runs one
// OpenBLAS thread (the kernel's JSON must say so) and records how it
// resolved it.
func TestLinpackAutoRecordsThreads(t *testing.T) {
	useKernels(t, "ctb-linpack")
	posingCgroup(t, map[string]string{"cpu.max": "50000 100000"})
	seen := map[string]string{}
	env := workload.Env{See: func(k, v string) { seen[k] = v }}
	p := values(t, "cpu.linpack", map[string]string{"n": "300", "threads": "auto"})
	if _, _, err := runLinpack(context.Background(), p, env); err != nil {
		t.Fatal(err)
	}
	if got := seen["cpu.linpack.threads"]; !strings.HasPrefix(got, "1 (asked auto;") || !strings.Contains(got, "cgroup CPU quota 0.5 CPUs") {
		t.Errorf("recorded %q, want 1 thread from a quota of 0.5", got)
	}
}
