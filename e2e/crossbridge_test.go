package e2e

import (
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform/lxc"
	"github.com/ctrbench/ctrbench/internal/platform/vm"
)

// Issue 29: S1 Table II's VM rows and their mixes with containers, on the
// bridge. A VM sits on the campaign's VM bridge, a Docker container on
// the campaign's Docker bridge: each pair must reach the other, both
// ways, and each must reach a host process and be reached by one. The
// Docker engine lets into its bridge only answers from outside, so a VM
// client reaching a container server needs ctrbench's own rule (from a
// bridge of ctrbench's to any of its bridges); an LXC client (its own
// bridge) the same. Every trial must be ok; nothing is left.
func TestVMAndContainersAcrossBridges(t *testing.T) {
	requireDocker(t)
	if err := vm.Available(); err != nil {
		t.Skip(err)
	}
	if err := lxc.Available(); err != nil {
		t.Skip(err)
	}
	db, id := runStored(t, `name: e2e-cross-bridges
seed: 2
repetitions: 1
warmup: 0
timeout: 3m
factors:
  network: [bridge]
  placement:
    vm-host: {client.platform: vm, server.platform: native}
    host-vm: {client.platform: native, server.platform: vm}
    vm-container: {client.platform: vm, server.platform: docker}
    container-vm: {client.platform: docker, server.platform: vm}
    lxc-container: {client.platform: lxc, server.platform: docker}
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}
`)
	cells := cellFactors(t, db, id)
	n := 0
	for _, tr := range storedTrials(t, db, id) {
		if tr.Status != "ok" {
			t.Errorf("trial %d (%s): %s %s", tr.Seq, cells[tr.CellID]["placement"], tr.Status, tr.Error)
			continue
		}
		if m := trialMeasures(tr); m["transactions_per_sec"] <= 0 {
			t.Errorf("trial %d (%s): %v", tr.Seq, cells[tr.CellID]["placement"], m)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d ok trials, want 5", n)
	}
}
