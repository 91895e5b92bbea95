package platform

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Timings become lifecycle observations: seconds after the request, phases
// in the order they happen, only those timed.
func TestTimingsObservations(t *testing.T) {
	t0 := time.Unix(100, 0)
	tm := Timings{Requested: t0, At: map[vocab.Phase]time.Time{
		vocab.Remove: t0.Add(900 * time.Millisecond), vocab.Create: t0.Add(200 * time.Millisecond), vocab.Start: t0.Add(500 * time.Millisecond),
	}}
	obs := tm.Observations("server")
	want := []struct {
		name string
		v    float64
	}{{"server.lifecycle.create", 0.2}, {"server.lifecycle.start", 0.5}, {"server.lifecycle.remove", 0.9}}
	if len(obs) != len(want) {
		t.Fatalf("%+v", obs)
	}
	for i, w := range want {
		if obs[i].ID().String() != w.name || obs[i].Value != w.v || obs[i].Unit != "s" || obs[i].Better != result.Lower {
			t.Errorf("%d: %+v, want %s = %v s", i, obs[i], w.name, w.v)
		}
	}
	if got := (Timings{}).Observations(""); len(got) != 0 {
		t.Errorf("no request time: %+v", got)
	}
}

// Provision, the one network rule: what a platform provides itself, what
// the lab wires, loopback, and what emulated hosts allow.
func TestProvision(t *testing.T) {
	ns := Driver{Name: "box", Noun: "box", Caps: Capabilities{Networks: []vocab.Network{vocab.Host, vocab.Bridge}, Net: Net{OwnNetNS: true, Wireable: true, JoinNetwork: true}}}
	proc := Driver{Name: "proc", Caps: Capabilities{Networks: []vocab.Network{vocab.Host}}}
	// A platform that brings its nodes: its modes join them, for up to Max
	// of them, no lab; Refuse says what this machine lacks (of any
	// platform, not only this kind).
	nodes := Driver{Name: "fleet", Noun: "task", Caps: Capabilities{Networks: []vocab.Network{vocab.Host, vocab.Overlay, vocab.OverlayEncrypted},
		Cluster: fleet{max: 4}, Net: Net{OwnNetNS: true, Refuse: func(n vocab.Network) error {
			if n == vocab.OverlayEncrypted {
				return errors.New("no esp4 module")
			}
			return nil
		}}}}
	holder := ns // shares a host's namespace by holding it (Docker)
	holder.Caps.Net.Holder = heldBy{}
	// A machine: a NIC the lab plugs into OVS or an emulated host's
	// bridge, nothing it can wire.
	machine := Driver{Name: "machine", Noun: "machine", Caps: Capabilities{Networks: []vocab.Network{vocab.Bridge}, Net: Net{OwnNetNS: true, Plugs: []vocab.Network{vocab.OVS, vocab.Bridge}}}}
	refusing := ns
	refusing.Caps.Net.Refuse = func(n vocab.Network) error {
		if n == vocab.Bridge {
			return errors.New("no bridge module")
		}
		return nil
	}
	for _, c := range []struct {
		d     Driver
		n     vocab.Network
		hosts int
		want  Provision
		err   string
	}{
		{ns, vocab.Bridge, 1, Provision{Platform: vocab.Bridge}, ""},
		{ns, vocab.Bridge, 2, Provision{Platform: vocab.None, Wire: vocab.Bridge}, ""},
		{ns, vocab.Macvlan, 1, Provision{Platform: vocab.None, Wire: vocab.Macvlan}, ""},
		{ns, vocab.Loopback, 1, Provision{Platform: vocab.None, Join: true}, ""},
		{ns, vocab.Overlay, 3, Provision{Platform: vocab.None, Wire: vocab.Overlay}, ""},
		{ns, vocab.Overlay, 1, Provision{}, "network overlay joins emulated hosts: it needs hosts 2 or more"},
		{ns, vocab.OVS, 2, Provision{Platform: vocab.None, Wire: vocab.OVS}, ""}, // a bridge per emulated host
		{ns, vocab.Macvlan, 2, Provision{}, "network macvlan is on the machine itself"},
		{ns, vocab.Host, 2, Provision{}, "a box cannot share an emulated host's namespace"},
		{ns, vocab.BridgeDefault, 1, Provision{}, "platform box does not offer network bridge-default here (hosts 1); it offers host, loopback, bridge, macvlan, ovs"},
		{proc, vocab.Bridge, 1, Provision{Platform: vocab.Host}, ""}, // a process talks across from the host side
		{holder, vocab.Host, 2, Provision{Platform: vocab.Host, HostNS: true}, ""},
		{holder, vocab.Host, 1, Provision{Platform: vocab.Host}, ""}, // the machine's own
		{proc, vocab.Host, 3, Provision{Platform: vocab.Host, HostNS: true}, ""},
		{proc, vocab.Host, 1, Provision{Platform: vocab.Host}, ""},
		{machine, vocab.OVS, 1, Provision{Platform: vocab.OVS, Plug: vocab.OVS}, ""},
		{machine, vocab.Bridge, 1, Provision{Platform: vocab.Bridge}, ""},                     // its own bridge
		{machine, vocab.Bridge, 2, Provision{Platform: vocab.Bridge, Plug: vocab.Bridge}, ""}, // its host's bridge
		{machine, vocab.OVS, 2, Provision{Platform: vocab.OVS, Plug: vocab.OVS}, ""},          // its host's OVS bridge
		{machine, vocab.Overlay, 2, Provision{}, "platform machine does not offer network overlay here (hosts 2); it offers bridge, ovs"},
		{machine, vocab.Macvlan, 1, Provision{}, "platform machine does not offer network macvlan here (hosts 1); it offers bridge, ovs"},
		{nodes, vocab.Overlay, 1, Provision{Platform: vocab.Overlay}, ""}, // one node: still its overlay
		{nodes, vocab.Host, 4, Provision{Platform: vocab.Host}, ""},       // a node's host network
		{nodes, vocab.Overlay, 5, Provision{}, "platform fleet gives a cell at most 4 nodes (hosts 5)"},
		{nodes, vocab.Bridge, 2, Provision{}, "platform fleet does not offer network bridge"},
		{nodes, vocab.OverlayEncrypted, 2, Provision{}, "no esp4 module"},
		{refusing, vocab.Bridge, 1, Provision{}, "no bridge module"},
		{refusing, vocab.Host, 1, Provision{Platform: vocab.Host}, ""},
	} {
		got, err := c.d.Provision(c.n, c.hosts)
		if c.err != "" {
			if err == nil || len(err.Error()) < len(c.err) || err.Error()[:len(c.err)] != c.err {
				t.Errorf("%s %s hosts %d: error %v, want %q", c.d.Name, c.n, c.hosts, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %s hosts %d: %+v %v, want %+v", c.d.Name, c.n, c.hosts, got, err, c.want)
		}
	}
}

// fleet is a cluster of at most max nodes whose links nothing shapes.
type fleet struct{ max int }

func (f fleet) MaxNodes() int                      { return f.max }
func (fleet) RoutesSettle() bool                   { return false }
func (fleet) Shape(Platform, vocab.Underlay) error { return nil }
func (fleet) Delays() bool                         { return false }

// heldBy holds emulated hosts' namespaces; no test here asks it to.
type heldBy struct{}

func (heldBy) HoldNamespace(context.Context, Platform, int) (string, error) { return "", nil }
