package e2e

import (
	"testing"
)

func meanRows(t *testing.T, src string) map[string]float64 {
	t.Helper()
	rows, _ := runReport[row](t, src)
	mean := map[string]float64{}
	for _, x := range rows {
		k := x.Workload + " " + x.Metric
		if a := x.Cell["antagonist"]; a != "" {
			k = x.Workload + "+" + a + " " + x.Metric
		}
		mean[k] = x.Mean
		mean[x.Cell["platform"]+":"+k] = x.Mean
	}
	return mean
}

// TestEmulatedMachine: "machine: {cpus: 0.5}" puts every container under
// one cgroup of half a core, so a two-thread CPU-bound agent with no limit
// of its own gets about one CPU-second in two seconds, not four.
func TestEmulatedMachine(t *testing.T) {
	requireDocker(t)
	mean := meanRows(t, `name: e2e-machine
seed: 5
repetitions: 1
machine: {cpus: 0.5}
factors:
  platform: [docker, native]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000, threads: 2}}
`)
	for _, p := range []string{"docker", "native"} {
		if v := mean[p+":cpu telemetry.cpu_seconds"]; v < 0.6 || v > 1.4 {
			t.Errorf("%s: cpu_seconds %v in 2 s under a 0.5-core machine, want about 1", p, v)
		}
	}
}

// TestNeighbourTelemetryAndThrottle: a neighbour in its own container has
// its own counters over the target's window (a CPU-bound one uses about a
// core for the 2-second window), and write_bps throttles direct writes.
func TestNeighbourTelemetryAndThrottle(t *testing.T) {
	requireDocker(t)
	mean := meanRows(t, `name: e2e-neighbour-telemetry
seed: 6
repetitions: 1
factors:
  platform: [docker]
  antagonist: [hog]
  packaging: [separate-containers]
  cpuset: ["0"]
  antagonist.cpuset: ["1"]
exclude:
  - {workload: hog}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000, threads: 1}}
  - {name: hog, type: cpu.primes, params: {duration: 1s, max_prime: 5000, threads: 1}}
`)
	v, ok := mean["cpu+hog antagonist.telemetry.cpu_seconds"]
	if !ok || v < 1.4 || v > 3.2 {
		t.Errorf("the neighbour's cpu_seconds over a 2 s window: %v (present %v), want about 2", v, ok)
	}
}

// TestWriteThrottle: write_bps caps a container's direct writes.
func TestWriteThrottle(t *testing.T) {
	requireDocker(t)
	rows, _ := runReport[row](t, `name: e2e-throttle
seed: 7
repetitions: 1
factors:
  platform: [docker]
  storage: [volume]
  write_bps: [none, 20MiB]
workloads:
  - {name: disk, type: disk.fio, params: {size: 64MiB, runtime: 2s, direct: true}}
`)
	got := map[string]float64{}
	for _, x := range rows {
		got[x.Cell["write_bps"]+" "+x.Metric] = x.Mean
	}
	if got["20MiB direct"] != 1 {
		t.Skipf("the volume refused O_DIRECT here (direct=%v): buffered writes are not throttled per cgroup on v1", got["20MiB direct"])
	}
	limit := 20 * 1.048576 // MB/s
	if v := got["20MiB seq_write_mbs"]; v <= 0 || v > 1.15*limit {
		t.Errorf("seq_write_mbs %.1f MB/s under a %.1f MB/s throttle", v, limit)
	}
	if v := got["none seq_write_mbs"]; v < 2*limit {
		t.Errorf("unthrottled seq_write_mbs %.1f MB/s: too slow to show the throttle", v)
	}
}
