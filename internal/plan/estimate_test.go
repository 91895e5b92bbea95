package plan

import (
	"testing"
	"time"
)

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		700 * time.Millisecond: "0.7 s",
		2 * time.Second:        "2 s",
		72 * time.Second:       "72 s",
		90 * time.Second:       "1.5 min",
		12 * time.Minute:       "12 min",
		100 * time.Minute:      "1.7 h",
		30 * time.Hour:         "30 h",
		53 * time.Hour:         "2.2 days",
	} {
		if got := human(d); got != want {
			t.Errorf("human(%s) = %q, want %q", d, got, want)
		}
	}
}

// The estimate counts every planned trial's measured time and every
// instance's start and stop, by platform: a duration parameter, a time
// from parameters (fio's), the work a workload without either asks at the
// rates it states, said apart; only a user's command is not counted.
func TestEstimate(t *testing.T) {
	e, cells := resolve(t, `name: est
repetitions: 3
warmup: 1
factors:
  platform: [native, docker]
  pairs: [1, 2]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 2s}}
  - {name: fio, type: disk.fio, params: {runtime: 1s}}
  - {name: stream, type: mem.stream, params: {array_size: 10000000, ntimes: 20}}
  - {name: job, type: exec, params: {command: [sh, -c, "echo 1"]}}
`)
	lo, hi := estimateRange(e, cells)
	// 16 cells (2 platforms × 2 pairs × 4 workloads) × 4 trials; tcp
	// measures 2 s, fio 4 × 1 s, stream 10M × (80·20 + 48) bytes at
	// 10 GB/s, 1.648 s; a trial starts 2 instances of tcp per pair, 1 of
	// the others: 15 instances a trial of each platform's 4 cells.
	stream := 1648 * time.Millisecond
	if lo.trials != 64 || lo.measured != 16*2*time.Second+16*4*time.Second+16*stream || lo.instances["native"] != 60 || lo.instances["docker"] != 60 ||
		lo.worked["mem.stream"] != 16 || lo.untimed["exec"] != 16 {
		t.Fatalf("estimate %+v", lo)
	}
	want := "estimated duration on this machine: ~2.8 min (2 min of measurement over 64 trials + about 48 s to start and stop 120 instances, counted at 0.1 s for native, 0.7 s for docker; not counted: the measurement of trials whose time nothing gives (16 exec); a rough estimate)\n" +
		"timed by the work their parameters ask, at the rates each workload states: 16 mem.stream: array_size × (80·ntimes + 48) bytes at 10 GB/s, the arrays written, the kernels run and checked, an auto size at 10M elements"
	if got := estimateLine(lo, hi); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	a, cells := resolve(t, `name: adaptive
repetitions: {min: 3, max: 10, rci: 2%}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 3s}}
`)
	lo, hi = estimateRange(a, cells)
	want = "estimated duration on this machine: ~9.3 s to 31 s (3 s of measurement × 3 to 10 trials + about 0.3 s to 1 s to start and stop 3 to 10 instances, counted at 0.1 s for native; a rough estimate)"
	if got := estimateLine(lo, hi); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A workload that sizes itself by its instance's CPUs (threads: auto) is
// estimated with the CPUs the file bounds the instance to — its own limit,
// a core under pinning, the emulated machine's — and one where the file
// bounds none, whatever this machine has.
func TestEstimateBoundCPUs(t *testing.T) {
	e, cells := resolve(t, `name: cpus
repetitions: 1
warmup: 0
machine: {cpus: 2}
factors:
  cpus: [none, "1", "1.5"]
workloads:
  - {name: L, type: cpu.linpack, params: {n: 3000, threads: auto}}
`)
	for cpus, want := range map[string]int{"none": 2, "1": 1, "1.5": 2} {
		if got := boundCPUs(e, find(t, cells, "cpus="+cpus)); got != want {
			t.Errorf("cpus %s under a 2-core machine: %d CPUs, want %d", cpus, got, want)
		}
	}
	// One solve of n = 3000: 2/3·n³ + 2·n² = 18.018 GFLOP at 40 GFLOPS a
	// thread, and 2·n² = 18M elements at 200 M/s: 0.45045 s + 0.09 s on
	// one thread, 0.225225 s + 0.09 s on two.
	lo, _ := estimateRange(e, cells)
	if want := 540450*time.Microsecond + 2*315225*time.Microsecond; !near(lo.measured, want) {
		t.Errorf("measured %s, want %s", lo.measured, want)
	}
	free, cells := resolve(t, `name: free
factors:
  cpuset: [none, "0-1", "1"]
workloads:
  - {name: L, type: cpu.linpack, params: {threads: auto}}
`)
	for cpuset, want := range map[string]int{"none": 1, "0-1": 2, "1": 1} {
		if got := boundCPUs(free, find(t, cells, "cpuset="+cpuset)); got != want {
			t.Errorf("cpuset %s, no machine: %d CPUs, want %d", cpuset, got, want)
		}
	}
	pinned, cells := resolve(t, `name: pinned
machine: {cpus: 2}
factors:
  pinning: [none, spread]
workloads:
  - {name: L, type: cpu.linpack, params: {threads: auto}}
`)
	for pinning, want := range map[string]int{"none": 2, "spread": 1} {
		if got := boundCPUs(pinned, find(t, cells, "pinning="+pinning)); got != want {
			t.Errorf("pinning %s under a 2-core machine: %d CPUs, want %d", pinning, got, want)
		}
	}
}

// near reports whether two durations agree to within a microsecond (float
// rounding).
func near(a, b time.Duration) bool { return (a - b).Abs() < time.Microsecond }
