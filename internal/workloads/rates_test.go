package workloads

import (
	"math"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// Each workload without a duration is estimated from the work its
// parameters ask, at the rates rates.go states: S0's and S3's paper sizes
// worked out by hand.
func TestWorkEstimates(t *testing.T) {
	for _, c := range []struct {
		typ    string
		params map[string]string
		cpus   int
		want   float64 // seconds
	}{
		// (2/3·15000³ + 2·15000²) flops at 40 GFLOPS, 2·15000² elements at 200 M/s.
		{"cpu.linpack", map[string]string{"n": "15000"}, 2, 56.26125 + 2.25},
		{"cpu.linpack", map[string]string{"n": "15000", "threads": "auto"}, 2, 28.130625 + 2.25},
		{"cpu.linpack", map[string]string{"n": "15000", "threads": "auto"}, 1, 56.26125 + 2.25},
		{"cpu.linpack", map[string]string{"n": "1000", "threads": "1", "repeat": "10"}, 4, 10 * (0.0167 + 0.01)},
		// 60M × (80·200 + 48) bytes at 10 GB/s; auto at 10M elements.
		{"mem.stream", map[string]string{"array_size": "60000000", "ntimes": "200"}, 1, 96.288},
		{"mem.stream", map[string]string{"array_size": "0", "ntimes": "10"}, 1, 0.848},
		// 4 × 8 GiB at 1 GB/s and 4 s; 4 × 1024 files at 5000 a second.
		{"disk.bonnie", map[string]string{"size": "8GiB"}, 1, 4*8*1.073741824 + 4},
		{"disk.bonnie", map[string]string{"size": "1GiB", "files": "2"}, 1, 4*1.073741824 + 4 + 4096.0/5000},
		// 100 MB generated at 25 MB/s, compressed at 10 and decompressed at 20 MB/s a thread.
		{"cpu.compress", map[string]string{"size": "100MB", "threads": "1"}, 2, 4 + 10 + 5},
		{"cpu.compress", map[string]string{"size": "100MB", "threads": "0"}, 2, 4 + 5 + 2.5},
		// S3's 128 files of 270 MB (16480 blocks of 16 KiB each), written at 1 GB/s, then 28 s.
		{"disk.sysbench_fileio", map[string]string{"file_total_size": "34560MB", "duration": "28s"}, 1, 28 + 128*16480*16384/1e9},
		{"disk.sysbench_fileio", map[string]string{"file_total_size": "64MiB", "duration": "2500ms"}, 1, 3 + 0.067108864},
		// 20 flows of 5 MB at 1 Gbit/s.
		{"net.transfer", map[string]string{"flows": "20", "size": "5MB"}, 1, 0.8},
		{"lifecycle.run", nil, 1, 0},
		// 1.5 s rounded up, and sockperf's own 2 s.
		{"net.sockperf", map[string]string{"duration": "1500ms"}, 1, 4},
	} {
		s, _ := workload.Lookup(c.typ)
		rt, ok := s.RunTime(values(t, c.typ, c.params), c.cpus)
		if !ok || rt.Basis == "" || math.Abs(rt.Time.Seconds()-c.want) > 1e-3 {
			t.Errorf("%s %v on %d CPUs: %s (%q, %v), want %.3f s from its work", c.typ, c.params, c.cpus, rt.Time, rt.Basis, ok, c.want)
		}
	}
	// A transfer for a time is timed by its duration, not its flows.
	s, _ := workload.Lookup("net.transfer")
	if rt, ok := s.RunTime(values(t, "net.transfer", map[string]string{"duration": "2s"}), 1); !ok || rt.Time != 2*time.Second || rt.Basis != "" {
		t.Errorf("net.transfer for 2 s: %+v %v, want 2 s from its duration", rt, ok)
	}
}

// Every workload but a user's command says how long a run takes, so the
// dry run counts every trial.
func TestEveryWorkloadIsTimed(t *testing.T) {
	for _, typ := range workload.Types() {
		s, _ := workload.Lookup(typ)
		if s.User.Declared != nil {
			continue // exec, service: a user's command, timed by nothing ctrbench knows
		}
		if _, ok := s.RunTime(values(t, typ, s.Smoke), 1); !ok {
			t.Errorf("%s: its smoke run has no time: give it a duration parameter, Measures or Work", typ)
		}
	}
}
