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
	} {
		if got := human(d); got != want {
			t.Errorf("human(%s) = %q, want %q", d, got, want)
		}
	}
}

// The estimate counts every planned trial's measured time and every
// instance's start and stop, by platform; a workload without a duration
// is said not to be counted.
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
  - {name: stream, type: mem.stream}
`)
	lo, hi := estimateRange(e, cells)
	// 12 cells (2 platforms × 2 pairs × 3 workloads) × 4 trials; tcp
	// measures 2 s, fio 4 × 1 s; a trial starts 2 instances of tcp per
	// pair, 1 of the others.
	if lo.trials != 48 || lo.measured != 4*4*2*time.Second+4*4*4*time.Second || lo.instances["native"] != 48 || lo.instances["docker"] != 48 {
		t.Fatalf("estimate %+v", lo)
	}
	want := "estimated duration on this machine: ~2.2 min (1.6 min of measurement over 48 trials + about 38 s to start and stop 96 instances, counted at 0.1 s for native, 0.7 s for docker; not counted: the measurement of trials without a duration parameter (16 mem.stream); a rough estimate)"
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
