package e2e

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform/vm"
	"github.com/ctrbench/ctrbench/internal/result"
)

// Issue 29: containers inside virtual machines, where S2 and S3 ran
// Docker. The workloads run as containers of a Docker Engine inside each
// machine (vm.engine docker; the process the machine's init starts, none,
// is the vm platform's conformance suite and every other vm test):
// request/response between two machines on the bridge, a container in
// each; make test-full adds a CPU kernel in a machine of its own (the same
// path, one more machine to boot under emulation). (The
// data directory in the container's overlay layer is the conformance
// suite's; these workloads need no tool, so the image store the seed
// machine builds here is the one that suite uses.) Every trial must be ok and say where it ran;
// nothing is left. Functional only: under emulation (TCG) the numbers say
// nothing about a hypervisor.
func TestVMWithEngineInside(t *testing.T) {
	requireDocker(t)
	if err := vm.Available(); err != nil {
		t.Skip(err)
	}
	asked := []string{"  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}"}
	if full() {
		asked = append(asked, "  - {name: cpu, type: cpu.primes, params: {duration: 1s, max_prime: 2000}}")
	}
	db, id := runStored(t, `name: e2e-vm-engine
seed: 3
repetitions: 1
warmup: 0
timeout: 3m
factors:
  platform: [vm]
  network: [bridge]
  vm.engine: [docker]
workloads:
`+strings.Join(asked, "\n")+"\n")
	cells, workloads := cellFactors(t, db, id), cellWorkloads(t, db, id)
	for _, tr := range okTrials(t, db, id, len(asked), func(tr result.Trial) string { return cells[tr.CellID][vm.FEngine] + ", " + workloads[tr.CellID] }) {
		engine := cells[tr.CellID][vm.FEngine]
		if got := tr.Seen["platform.vm.engine"]; got != vm.EngineDocker {
			t.Errorf("trial %d (%s): seen vm.engine %q", tr.Seq, engine, got)
		}
		m := trialMeasures(tr)
		switch workloads[tr.CellID] {
		case "cpu":
			if m["events_per_sec"] <= 0 {
				t.Errorf("trial %d (%s): %v", tr.Seq, engine, m)
			}
		case "rr":
			if m["transactions_per_sec"] <= 0 {
				t.Errorf("trial %d (%s): %v", tr.Seq, engine, m)
			}
		}
	}
}
