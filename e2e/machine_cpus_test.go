package e2e

import (
	"fmt"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Issue 29: S4's core count as a factor. machine.cpus sets the emulated
// machine's CPU quota cell by cell: every instance of a trial is below the
// machine's cgroup, so a CPU-bound target in a Docker container and one
// as a host process get at most half a core at machine.cpus 0.5 — a
// kernel's hard limit (CFS), not a statistic: its CPU time over its 2 s
// run is at most 0.5 × the run plus a period's slack and the agent's
// start. Without a quota (none) the same trial is free to use a core.
// Every trial records the cores it had (placement.cores) and its hosting
// entities per core.
func TestMachineCPUsFactor(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-machine-cpus
seed: 4
repetitions: 1
warmup: 0
factors:
  platform: [docker, native]
  machine.cpus: ["0.5", none]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000}}
`)
	cells := cellFactors(t, db, id)
	n := 0
	factors := func(tr result.Trial) string { return fmt.Sprint(cells[tr.CellID]) }
	for _, tr := range okOf(t, storedTrials(t, db, id), factors) {
		f := cells[tr.CellID]
		n++
		cpu := -1.0
		for _, o := range tr.Observations {
			if o.Metric == "cpu_seconds" && o.Kind == result.KindTelemetry && o.Scope == result.ScopeTrial && o.Role == "" {
				cpu = o.Value
			}
		}
		wall := tr.Ended.Sub(tr.Started).Seconds()
		t.Logf("%s machine.cpus=%s: %.2f s of CPU in a %.1f s trial; cores %s, entities per core %s", f["platform"], f["machine.cpus"], cpu, wall,
			tr.Seen["placement.cores"], tr.Seen["placement.entities_per_core"])
		if cpu < 0 {
			t.Errorf("trial %d (%v): no cpu_seconds telemetry", tr.Seq, f)
			continue
		}
		if f["machine.cpus"] == "0.5" {
			// 2 s of work time, the agent's start and its first period.
			if cpu > 0.5*2.0+0.25 {
				t.Errorf("trial %d (%v): %.2f s of CPU in 2 s under a quota of half a core", tr.Seq, f, cpu)
			}
			if tr.Seen["placement.cores"] != "0.5" || tr.Seen["placement.entities_per_core"] != "2.000" {
				t.Errorf("trial %d (%v): placement %q cores, %q per core", tr.Seq, f, tr.Seen["placement.cores"], tr.Seen["placement.entities_per_core"])
			}
		}
	}
	if n != 4 {
		t.Errorf("%d ok trials, want 4", n)
	}
}
