package spec

import (
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// A placement's limit levels parse into the platform's limits.
func TestLimits(t *testing.T) {
	l, err := Placement{CPUs: "1.5", Cpuset: "0-1", Memory: "512MiB", ReadBps: "50MiB", WriteBps: vocab.NoLimit, BlkioWeight: "300"}.limits()
	if err != nil || l != (platform.Limits{CPUs: 1.5, Cpuset: "0-1", MemoryBytes: 512 << 20, ReadBps: 50 << 20, BlkioWeight: 300}) {
		t.Fatalf("%+v %v", l, err)
	}
	l, err = Placement{CPUs: vocab.NoLimit, Cpuset: vocab.NoLimit, Memory: vocab.NoLimit}.limits()
	if err != nil || !l.IsZero() {
		t.Fatalf("%+v %v", l, err)
	}
}

// A cell's levels are parsed once: counts, underlay, each role's
// placement with its limits, and the emulated host each role runs on
// (spread along the chain, the driver on host 1, unless placed).
func TestLevelsOf(t *testing.T) {
	e := parse(t, "name: l\nfactors:\n  hosts: [3]\n  underlay: [1gbit delay 2ms]\n  server.cpuset: ['0-1']\n  client.cpus: ['0.5']\nworkloads: [{type: net.tcp_stream}]\n")
	cells := e.Cells()
	if len(cells) != 1 {
		t.Fatalf("cells: %v", keys(cells))
	}
	lv, err := e.LevelsOf(cells[0])
	if err != nil {
		t.Fatal(err)
	}
	if lv.Hosts != 3 || lv.Pairs != 1 || lv.Instances != 1 || lv.Pinning != vocab.PinNone || lv.MachineCPUs != 0 || !lv.Underlay.Delays() {
		t.Errorf("levels %+v", lv)
	}
	if s := lv.Placement("server"); s.Cpuset != "0-1" || s.CpusetSize != 2 || s.Limits.Cpuset != "0-1" {
		t.Errorf("server %+v", s)
	}
	if c := lv.Placement("client"); c.Limits.CPUs != 0.5 || c.CpusetSize != 0 {
		t.Errorf("client %+v", c)
	}
	if s, c, n := lv.HostOf("server"), lv.HostOf("client"), lv.HostOf(vocab.RoleNeighbour); s != 2 || c != 1 || n != 1 {
		t.Errorf("hosts: server %d, client %d, neighbour %d", s, c, n)
	}
}
