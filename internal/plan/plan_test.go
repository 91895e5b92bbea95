package plan

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	_ "github.com/ctrbench/ctrbench/internal/platform/drivers"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	"github.com/ctrbench/ctrbench/internal/vocab"
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

func resolve(t *testing.T, text string) (*spec.Experiment, []*Cell) {
	t.Helper()
	e, err := spec.Parse("p.yaml", []byte(text), nil, spec.Machine{CPUs: 2, MemBytes: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	cells, err := ResolveAll(e, e.Cells())
	if err != nil {
		t.Fatal(err)
	}
	return e, cells
}

// find returns the one cell whose factors include every level given.
func find(t *testing.T, cells []*Cell, levels string) *Cell {
	t.Helper()
	var hit []*Cell
	for _, c := range cells {
		ok := true
		for _, kv := range strings.Fields(levels) {
			k, v, _ := strings.Cut(kv, "=")
			if k == "workload" {
				ok = ok && c.Workload.Type == v
			} else {
				ok = ok && c.Factors[k] == v
			}
		}
		if ok {
			hit = append(hit, c)
		}
	}
	if len(hit) != 1 {
		t.Fatalf("%d cells match %q", len(hit), levels)
	}
	return hit[0]
}

var (
	loop = Addr{Kind: Loopback}
	anyA = Addr{Kind: Any}
	own  = Addr{Kind: Own}
)

func TestPlacementsOnTheMachine(t *testing.T) {
	_, cells := resolve(t, `name: m
factors:
  placement:
    native:    {platform: native, network: host}
    host:      {platform: docker, network: host}
    bridge:    {platform: docker, network: bridge}
    loopback:  {platform: docker, network: loopback}
    macvlan:   {platform: docker, network: macvlan}
    to-native: {server.platform: native, client.platform: docker, network: bridge}
    to-ovs:    {server.platform: native, client.platform: docker, network: ovs}
workloads: [{type: net.tcp_stream}]
`)
	for _, c := range []struct {
		levels   string
		server   platform.Provision
		client   platform.Provision
		link     Link
		counters invocation.Counters // the client's
	}{
		{"placement=native", platform.Provision{Platform: vocab.Host}, platform.Provision{Platform: vocab.Host}, Link{loop, loop}, invocation.Counters{}},
		{"placement=host", platform.Provision{Platform: vocab.Host}, platform.Provision{Platform: vocab.Host}, Link{loop, loop}, invocation.Counters{Cgroup: true}},
		{"placement=bridge", platform.Provision{Platform: vocab.Bridge}, platform.Provision{Platform: vocab.Bridge}, Link{anyA, own}, invocation.Counters{Cgroup: true, Netns: true}},
		{"placement=loopback", platform.Provision{Platform: vocab.None, Join: true}, platform.Provision{Platform: vocab.None, Join: true}, Link{loop, loop}, invocation.Counters{Cgroup: true, Netns: true}},
		{"placement=macvlan", platform.Provision{Platform: vocab.None, Wire: vocab.Macvlan}, platform.Provision{Platform: vocab.None, Wire: vocab.Macvlan}, Link{anyA, own}, invocation.Counters{Cgroup: true, Netns: true}},
		// A host process serves a container across the bridge Docker made:
		// it listens on, and is reached at, the bridge's gateway.
		{"placement=to-native", platform.Provision{Platform: vocab.Host}, platform.Provision{Platform: vocab.Bridge},
			Link{Addr{Kind: HostSide, Network: vocab.Bridge, Platform: "docker"}, Addr{Kind: HostSide, Network: vocab.Bridge, Platform: "docker"}}, invocation.Counters{Cgroup: true, Netns: true}},
		// … and across a network the lab made, at the lab's host port.
		{"placement=to-ovs", platform.Provision{Platform: vocab.Host}, platform.Provision{Platform: vocab.None, Wire: vocab.OVS},
			Link{Addr{Kind: HostSide, Network: vocab.OVS}, Addr{Kind: HostSide, Network: vocab.OVS}}, invocation.Counters{Cgroup: true, Netns: true}},
	} {
		cell := find(t, cells, c.levels)
		srv, cli := cell.Chain[0], cell.Chain[1]
		if srv.Name != "server" || cli.Name != "client" || cell.Driver().Name != "client" {
			t.Fatalf("%s: chain %s, %s", c.levels, srv.Name, cli.Name)
		}
		if srv.Provision != c.server || cli.Provision != c.client {
			t.Errorf("%s: provisions %+v, %+v; want %+v, %+v", c.levels, srv.Provision, cli.Provision, c.server, c.client)
		}
		if len(cell.Links) != 1 || cell.Links[0] != c.link {
			t.Errorf("%s: link %+v, want %+v", c.levels, cell.Links, c.link)
		}
		if cli.Counters != c.counters {
			t.Errorf("%s: counters %+v, want %+v", c.levels, cli.Counters, c.counters)
		}
		if srv.Host != 0 || cell.Hosts != 1 || cell.Pairs != 1 {
			t.Errorf("%s: host %d, hosts %d, pairs %d", c.levels, srv.Host, cell.Hosts, cell.Pairs)
		}
	}
}

// Across emulated hosts the chain spreads, driver on host 1: S2's load
// generator, ping and pong on three machines.
func TestPlacementsAcrossEmulatedHosts(t *testing.T) {
	_, cells := resolve(t, `name: h
factors:
  hosts: [3]
  layer:
    reference: {platform: native, network: host}
    docker:    {platform: docker, network: bridge}
    overlay:   {platform: docker, network: overlay}
workloads: [{type: http.pingpong}]
`)
	ref := find(t, cells, "layer=reference")
	for i, want := range []int{3, 2, 1} { // pong, ping, client
		r := ref.Chain[i]
		if r.Host != want || !r.InHostNS() || r.RootNS() {
			t.Errorf("reference %s: host %d (want %d), in host ns %v, root %v", r.Name, r.Host, want, r.InHostNS(), r.RootNS())
		}
	}
	// Processes on different emulated hosts: the server listens on every
	// address of its host's namespace, the client dials that host's
	// address on the underlay.
	if want := (Link{anyA, Addr{Kind: HostSide, Network: vocab.Host, Host: 3}}); ref.Links[0] != want {
		t.Errorf("reference pong<-ping: %+v, want %+v", ref.Links[0], want)
	}
	dock := find(t, cells, "layer=docker")
	if p := dock.Chain[0].Provision; p != (platform.Provision{Platform: vocab.None, Wire: vocab.Bridge}) {
		t.Errorf("docker on hosts 3 bridge: %+v (the lab routes the bridge between hosts)", p)
	}
	over := find(t, cells, "layer=overlay")
	if p := over.Chain[1].Provision; p != (platform.Provision{Platform: vocab.None, Wire: vocab.Overlay}) || over.Links[1] != (Link{anyA, own}) {
		t.Errorf("overlay ping: %+v, link %+v", p, over.Links[1])
	}
	n := Collect(cells)
	if n.Hosts != 3 || !reflect.DeepEqual(n.Lab, []vocab.Network{vocab.Bridge, vocab.Overlay}) || !n.NeedsLab() {
		t.Errorf("needs: hosts %d, lab %v", n.Hosts, n.Lab)
	}
}

func TestNeighboursAndNeeds(t *testing.T) {
	_, cells := resolve(t, `name: n
factors:
  platform: [docker]
  neighbour: [none, cpu, io]
  packaging: [same-container, separate-containers]
  neighbour.cpuset: ["1"]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 1s}}
  - {name: io, type: disk.fio}
`)
	alone := find(t, cells, "workload=cpu.primes neighbour=none")
	if len(alone.Neighbours.Specs) != 0 || alone.Neighbours.Separate {
		t.Errorf("alone: %+v", alone.Neighbours)
	}
	same := find(t, cells, "workload=cpu.primes neighbour=io packaging=same-container")
	if len(same.Neighbours.Specs) != 1 || !strings.HasPrefix(same.Neighbours.Specs[0], "disk.fio={") || same.Neighbours.Separate {
		t.Errorf("same container: %+v", same.Neighbours)
	}
	apart := find(t, cells, "workload=cpu.primes neighbour=io packaging=separate-containers")
	if !apart.Neighbours.Separate || apart.Neighbours.Role.Name != vocab.RoleNeighbour || apart.Neighbours.Role.Limits.Cpuset != "1" {
		t.Errorf("separate: %+v", apart.Neighbours)
	}
	// fio runs in the target's container with packaging same-container,
	// in the neighbour's own otherwise: either way the image needs it.
	n := Collect(cells)
	d := n.Platforms["docker"]
	if d == nil || !reflect.DeepEqual(d.Tools, []string{"fio"}) || !reflect.DeepEqual(d.Networks, []vocab.Network{vocab.Host}) ||
		!reflect.DeepEqual(d.Storages, []vocab.Storage{vocab.Layer}) || n.NeedsLab() || !reflect.DeepEqual(n.PlatformNames(), []string{"docker"}) {
		t.Errorf("needs %+v %+v", n, d)
	}
}

// A platform that is not registered is an error, never a guess.
func TestUnknownPlatform(t *testing.T) {
	e, _ := resolve(t, "name: u\nworkloads: [{type: cpu.primes}]\n")
	_, err := Resolve(e, result.Cell{ID: 1, Workload: "x", WorkloadType: "cpu.primes", Factors: map[string]string{"platform": "vmware"}})
	if err == nil || !strings.Contains(err.Error(), `no platform "vmware"`) {
		t.Errorf("got %v", err)
	}
}

// On a cluster platform the cell's hosts are its nodes: the chain spreads
// over them (or a role names its node), the swarm provides the network
// itself, a server on a node's host network listens on all its addresses
// and is reached at its own (the node's), and no emulated host is built.
func TestPlacementsOnACluster(t *testing.T) {
	_, cells := resolve(t, `name: s
factors:
  platform: [swarm]
  hosts: [3]
  network: [overlay, host]
  layer:
    spread: {}
    named: {pong.node: worker-7}
workloads: [{type: http.pingpong}]
`)
	for _, network := range []string{"overlay", "host"} {
		c := find(t, cells, "layer=spread network="+network)
		for i, want := range []int{3, 2, 1} { // pong, ping, client
			r := c.Chain[i]
			if r.Host != want || r.RootNS() || r.InHostNS() || r.Provision != (platform.Provision{Platform: vocab.Network(network)}) {
				t.Errorf("%s %s: host %d (want %d), root %v, provision %+v", network, r.Name, r.Host, want, r.RootNS(), r.Provision)
			}
		}
		for i, l := range c.Links {
			if l != (Link{anyA, own}) {
				t.Errorf("%s link %d: %+v, want the server's own address", network, i, l)
			}
		}
		named := find(t, cells, "layer=named network="+network)
		if r := named.Chain[0]; r.Node != "worker-7" || r.Host != 0 {
			t.Errorf("pong.node: node %q host %d", r.Node, r.Host)
		}
	}
	n := Collect(cells)
	if n.NeedsLab() || n.Hosts != 1 || n.Platforms["swarm"].Hosts != 3 {
		t.Errorf("needs: lab %v, emulated hosts %d, swarm nodes %d", n.NeedsLab(), n.Hosts, n.Platforms["swarm"].Hosts)
	}
}

// Issue 29: a server behind a port its engine publishes is reached from
// the machine at what the engine published (its NAT on the bridge's
// address, or its userland proxy on loopback), listening on the port it
// was given; a client inside a container, or a workload with more than
// one TCP port, is refused with what to do.
func TestPublishedPorts(t *testing.T) {
	for _, w := range []struct{ typ, server string }{{"net.tcp_stream", "server"}, {"http.get", "pong"}} {
		_, cells := resolve(t, `name: p
factors:
  platform: [docker]
  `+w.server+`.network: [published, published-proxy]
  client.platform: [native]
workloads: [{type: `+w.typ+`}]
`)
		for _, n := range []vocab.Network{vocab.Published, vocab.PublishedProxy} {
			cell := find(t, cells, w.server+".network="+string(n))
			want := Link{anyA, Addr{Kind: Published, Network: n}}
			if len(cell.Links) != 1 || cell.Links[0] != want {
				t.Errorf("%s %s: links %+v, want %+v", w.typ, n, cell.Links, want)
			}
			if srv := cell.Chain[0]; srv.Provision.Platform != n || srv.Host != 0 {
				t.Errorf("%s %s: server provision %+v", w.typ, n, srv.Provision)
			}
		}
	}
	// Between emulated hosts the lab publishes: the server on its host's
	// NAT bridge, reached at its host's address by a client on another.
	_, cells := resolve(t, `name: p
factors:
  platform: [docker]
  hosts: [2]
  server.network: [published]
  client:
    native: {client.platform: native}
    docker: {client.platform: docker, client.network: published}
workloads: [{type: net.udp_stream}]
`)
	for _, cli := range []string{"native", "docker"} {
		cell := find(t, cells, "client="+cli)
		want := Link{anyA, Addr{Kind: Published, Network: vocab.Published, Host: 2}}
		if len(cell.Links) != 1 || cell.Links[0] != want {
			t.Errorf("across hosts, client %s: links %+v, want %+v", cli, cell.Links, want)
		}
		if srv := cell.Chain[0]; srv.Provision != (platform.Provision{Platform: vocab.None, Wire: vocab.Published}) || srv.Host != 2 {
			t.Errorf("across hosts: server %+v on host %d", srv.Provision, srv.Host)
		}
		if !slices.Equal(cell.Publish, []vocab.Port{{Number: PublishedPort, Proto: "udp"}}) {
			t.Errorf("across hosts: more ports %v", cell.Publish)
		}
	}
	// More ports: a UDP workload's socket on the agent's port number, a
	// service's own port.
	for _, w := range []struct {
		typ, params string
		want        []vocab.Port
	}{
		{"net.udp_stream", "{}", []vocab.Port{{Number: PublishedPort, Proto: "udp"}}},
		{"net.udp_rr", "{}", []vocab.Port{{Number: PublishedPort, Proto: "udp"}}},
		{"service", "{command: [redis-server], port: 6379, client: {type: net.tcp_rr}}", []vocab.Port{{Number: 6379, Proto: "tcp"}}},
		{"net.tcp_rr", "{}", nil},
	} {
		_, cells := resolve(t, `name: p
factors:
  platform: [docker]
  server.network: [published, bridge]
  client.platform: [native]
workloads: [{type: `+w.typ+`, params: `+w.params+`}]
`)
		if got := find(t, cells, "server.network=published").Publish; !slices.Equal(got, w.want) {
			t.Errorf("%s published: more ports %v, want %v", w.typ, got, w.want)
		}
		if got := find(t, cells, "server.network=bridge").Publish; got != nil {
			t.Errorf("%s on the bridge: more ports %v, want none", w.typ, got)
		}
	}
	for _, bad := range []struct{ file, want string }{
		{`name: p
factors: {platform: [docker], network: [published]}
workloads: [{type: net.tcp_stream}]
`, "its client must run on the machine"},
		{`name: p
factors: {platform: [docker], server.network: [published], client.platform: [native]}
workloads: [{type: net.sockperf}]
`, "use it with http.get, http.pingpong, http.wrk, net.iperf3, net.tcp_rr, net.tcp_stream, net.udp_rr, net.udp_stream, service"},
		{`name: p
factors: {platform: [docker], server.network: [published], client.platform: [native]}
workloads: [{type: service, params: {command: [redis-server], port: 15201, client: {type: net.tcp_rr}}}]
`, "the server listens on port 15201/tcp, which its agent takes on a published network"},
		{`name: p
factors: {platform: [docker], server.network: [published-proxy], client.platform: [native], hosts: [2]}
workloads: [{type: net.tcp_stream}]
`, "a client on another host never reaches an engine's userland proxy"},
	} {
		e, err := spec.Parse("p.yaml", []byte(bad.file), nil, spec.Machine{CPUs: 2, MemBytes: 8 << 30})
		if err == nil {
			_, err = ResolveAll(e, e.Cells())
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error saying %q", bad.file, err, bad.want)
		}
	}
}

// Issue 29: an underlay that delays is carried by emulated hosts' delay
// lines (the lab is told to build them); a cell with no emulated hosts,
// or on a cluster platform's own nodes, is refused with the reason.
func TestUnderlayDelays(t *testing.T) {
	_, cells := resolve(t, `name: d
factors:
  hosts: [2]
  underlay: [1gbit, "1gbit delay 10ms"]
workloads: [{type: net.tcp_rr}]
`)
	if n := Collect(cells); !n.Delays || n.Hosts != 2 {
		t.Errorf("needs %+v: want delay lines on 2 hosts", n)
	}
	var plain []*Cell
	for _, c := range cells {
		if c.Factors[vocab.FUnderlay] == "1gbit" {
			plain = append(plain, c)
		} else if c.Underlay.Delay != 10*time.Millisecond || c.Underlay.Rate.String() != "1gbit" {
			t.Errorf("cell underlay %+v", c.Underlay)
		}
	}
	if n := Collect(plain); len(plain) != 1 || n.Delays {
		t.Errorf("a rate alone asks for delay lines")
	}
	for text, want := range map[string]string{
		"factors: {underlay: [\"1gbit delay 1ms\"]}":                              "add hosts: 2",
		"factors: {platform: [swarm], hosts: [2], underlay: [\"1gbit loss 1%\"]}": "platform swarm's nodes",
	} {
		e, err := spec.Parse("p.yaml", []byte("name: d\n"+text+"\nworkloads: [{type: net.tcp_rr}]\n"), nil, spec.Machine{CPUs: 2, MemBytes: 8 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ResolveAll(e, e.Cells()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", text, err, want)
		}
	}
}
