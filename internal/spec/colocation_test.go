package spec

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

const jhaLike = `name: jha
factors:
  platform: [docker]
  neighbour: [L, S, "L+S", idle]
  packaging: [same-container, separate-containers]
  cpus: ["1"]
  neighbour.cpuset: ["1"]
workloads:
  - {name: L, type: cpu.primes}
  - {name: S, type: cpu.primes, params: {max_prime: 2000}}
`

func TestNeighbourCells(t *testing.T) {
	e, err := Parse("jha.yaml", []byte(jhaLike), nil, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := findFactor(e.Factors, vocab.FNeighbour)
	if f == nil || f.Levels[0] != vocab.NeighbourNone {
		t.Fatalf("solo (none) must be added first: %+v", f)
	}
	if e.Baseline[vocab.FNeighbour] != vocab.NeighbourNone {
		t.Fatalf("baseline %v", e.Baseline)
	}
	cells := e.Cells()
	// Per workload: solo once (packaging is meaningless alone), and each of
	// 4 neighbour levels in 2 packagings.
	if len(cells) != 2*(1+4*2) {
		t.Fatalf("%d cells: %v", len(cells), keys(cells))
	}
	for _, c := range cells {
		_, hasPack := c.Factors[vocab.FPackaging]
		if (c.Factors[vocab.FNeighbour] == vocab.NeighbourNone) == hasPack {
			t.Errorf("cell %s: packaging must be present exactly when there is a neighbour", c.Key())
		}
		base, ok := e.BaselineOf(c, cells)
		if !ok {
			t.Fatalf("cell %s has no baseline", c.Key())
		}
		b := cells[base-1]
		if b.Workload != c.Workload || b.Factors[vocab.FNeighbour] != vocab.NeighbourNone || b.Factors[vocab.FCPUs] != "1" {
			t.Errorf("baseline of %s is %s, want %s solo under the same limits", c.Key(), b.Key(), c.Workload)
		}
	}
	if got := vocab.NeighboursOf("L+S"); len(got) != 2 || got[0] != "L" || got[1] != "S" {
		t.Errorf("Neighbours(L+S) = %v", got)
	}
	if pl := placementFor(cells[3].Factors, vocab.RoleNeighbour); pl.Cpuset != "1" || pl.CPUs != "1" {
		t.Errorf("neighbour placement %+v", pl)
	}
}

// samePod puts neighbours in the target's pod; its workloads end the
// file, so a case can add one.
const samePod = `name: jha
factors:
  platform: [kubernetes]
  neighbour: [N]
  packaging: [same-pod]
  neighbour.cpus: ["0.5"]
workloads:
  - {name: T, type: cpu.primes}
`

// TestSamePod: one-role neighbours in the target's pod, with limits of
// their own, on a platform with pods: accepted, packaging kept.
func TestSamePod(t *testing.T) {
	e, err := Parse("jha.yaml", []byte(samePod+"  - {name: N, type: cpu.primes}\n"), nil, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range e.Cells() {
		if c.Factors[vocab.FNeighbour] == "N" {
			n++
			if c.Factors[vocab.FPackaging] != vocab.PackPod {
				t.Errorf("cell %s lost its packaging", c.Key())
			}
		}
	}
	if n == 0 {
		t.Error("no cell with the neighbour")
	}
}

func TestNeighbourProblems(t *testing.T) {
	for name, c := range map[string]struct{ src, want string }{
		"unknown neighbour":                   {strings.Replace(jhaLike, `"L+S"`, `"L+X"`, 1), `jha.yaml:4:21: level "L+X" of neighbour: "X" is not a workload of this file; allowed: none, idle, L, S, or several joined by +`},
		"bad packaging":                       {strings.Replace(jhaLike, "same-container,", "same-host,", 1), `jha.yaml:5:15: level "same-host" of packaging: allowed: same-container, same-pod, separate-containers`},
		"same-pod, no pods":                   {strings.Replace(jhaLike, "same-container,", "same-pod,", 1), `jha.yaml:5:3: packaging same-pod runs the neighbours in containers of the target's pod, and platform docker has no pods (platforms with pods: kubernetes): use packaging same-container or separate-containers`},
		"same-pod, a client/server neighbour": {samePod + "  - {name: N, type: net.tcp_rr}\n", `neighbour N (net.tcp_rr) is a client and a server, and packaging same-pod runs one-role neighbours`},
		"same-pod, a neighbour elsewhere":     {strings.Replace(samePod, "neighbour.cpus: [\"0.5\"]", "neighbour.node: [k8s-node2]", 1) + "  - {name: N, type: cpu.primes}\n", `packaging same-pod runs the neighbours in the target's pod, so they have its node (unset), not neighbour.node "k8s-node2": leave neighbour.node out or use packaging separate-containers`},
		"packaging alone":                     {"name: x\nfactors:\n  packaging: [same-container]\nworkloads: [{type: cpu.primes}]\n", "x.yaml:3:3: factor packaging says how neighbours are packaged, but there is no neighbour factor"},
	} {
		file := "jha.yaml"
		if strings.HasPrefix(c.want, "x.yaml") {
			file = "x.yaml"
		}
		_, err := Parse(file, []byte(c.src), nil, Machine{CPUs: 2})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", name, err, c.want)
		}
	}
}

// A workload used only as a neighbour is excluded as a target and needs no
// baseline of its own.
func TestNeighbourOnlyWorkload(t *testing.T) {
	src := `name: aa
factors:
  platform: [docker]
  neighbour: [noisy]
  packaging: [separate-containers]
exclude:
  - {workload: noisy}
workloads:
  - {name: target, type: cpu.primes}
  - {name: noisy, type: cpu.primes}
`
	e, err := Parse("aa.yaml", []byte(src), nil, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if cells := e.Cells(); len(cells) != 2 || cells[0].Workload != "target" {
		t.Fatalf("%v", keys(cells))
	}
}

// symmetric: a neighbour-only workload is measured as the target too,
// beside each workload it neighbours, with its own baseline.
func TestSymmetric(t *testing.T) {
	src := `name: aa
symmetric: true
factors:
  platform: [docker]
  neighbour: [noisy]
  packaging: [separate-containers]
  cpus: ["1"]
exclude:
  - {workload: noisy}
workloads:
  - {name: target, type: cpu.primes}
  - {name: noisy, type: cpu.primes}
`
	e, err := Parse("aa.yaml", []byte(src), nil, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	cells := e.Cells()
	got := keys(cells)
	if len(cells) != 4 {
		t.Fatalf("want target alone, target+noisy, noisy+target, noisy alone; got %v", got)
	}
	var mirror bool
	for _, c := range cells {
		if c.Workload == "noisy" && c.Factors[vocab.FNeighbour] == "target" {
			mirror = true
			if _, ok := e.BaselineOf(c, cells); !ok {
				t.Errorf("mirrored cell %s has no baseline", c.Key())
			}
		}
	}
	if !mirror {
		t.Errorf("no mirrored cell in %v", got)
	}
	// Without symmetric the file measures one side only.
	e2, _ := Parse("aa.yaml", []byte(strings.Replace(src, "symmetric: true", "symmetric: false", 1)), nil, Machine{CPUs: 2})
	if n := len(e2.Cells()); n != 2 {
		t.Errorf("symmetric false: %d cells, want 2", n)
	}
	_, err = Parse("x.yaml", []byte("name: x\nsymmetric: true\nworkloads: [{type: cpu.primes}]\n"), nil, Machine{CPUs: 2})
	if err == nil || !strings.Contains(err.Error(), "x.yaml:2:12: symmetric measures both sides") {
		t.Errorf("symmetric without neighbour: %v", err)
	}
}

func TestMachineAndBlkio(t *testing.T) {
	m := Machine{CPUs: 2, MemBytes: 8 << 30, NoBlkioWeight: true}
	src := "name: m\nmachine: {cpus: 2, memory: 4GiB}\nfactors:\n  platform: [docker]\n  write_bps: [none, 50MiB]\nworkloads: [{type: cpu.primes}]\n"
	e, err := Parse("m.yaml", []byte(src), nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if e.Envelope.CPUs != 2 || e.Envelope.MemoryBytes != 4<<30 {
		t.Errorf("envelope %+v", e.Envelope)
	}
	if pl := placementFor(e.Cells()[1].Factors, "main"); pl.WriteBps != "50MiB" {
		t.Errorf("placement %+v", pl)
	}
	for name, c := range map[string]struct{ src, want string }{
		"machine too big": {strings.Replace(src, "memory: 4GiB", "memory: 64GiB", 1), "m.yaml:2:28: machine: level \"64GiB\" of memory: larger than this machine's memory"},
		"machine bad key": {strings.Replace(src, "cpus: 2", "cores: 2", 1), `m.yaml:2:11: unknown key "cores" in machine; allowed: cpus, cpuset, memory`},
		"no blkio weight": {strings.Replace(src, "write_bps: [none, 50MiB]", "blkio_weight: [100, 500]", 1), `m.yaml:5:18: level "100" of blkio_weight: this kernel has no proportional block I/O weight`},
		"bad weight":      {strings.Replace(src, "write_bps: [none, 50MiB]", "blkio_weight: [5]", 1), `m.yaml:5:18: level "5" of blkio_weight: want none or a weight from 10 to 1000`},
		"bad rate":        {strings.Replace(src, "50MiB", "fast", 1), `m.yaml:5:21: level "fast" of write_bps: want none or bytes per second`},
	} {
		_, err := Parse("m.yaml", []byte(c.src), nil, m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", name, err, c.want)
		}
	}
}

// S2's layers: a factor whose levels are named sets of other factors'
// levels, compared each with the one below it (baseline: previous).
func TestBundleLayersAndPrevious(t *testing.T) {
	src := `name: layers
factors:
  hosts: [3]
  layer:
    reference: {platform: native, network: host}
    docker: {platform: docker, network: bridge}
    overlay: {platform: docker, network: overlay}
  param.size: [10, 1000]
baseline: {layer: previous}
workloads:
  - {name: pp, type: http.pingpong}
`
	e, err := Parse("l.yaml", []byte(src), nil, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	cells := e.Cells()
	if len(cells) != 6 {
		t.Fatalf("%d cells: %v", len(cells), keys(cells))
	}
	byKey := map[string]int{}
	for _, c := range cells {
		byKey[c.Factors["layer"]+"/"+c.Factors["param.size"]] = c.ID
		if pl := placementFor(c.Factors, "pong"); c.Factors["layer"] == "overlay" && (pl.Platform != "docker" || pl.Network != vocab.Overlay) {
			t.Errorf("overlay layer placed pong as %+v", pl)
		}
	}
	for _, c := range cells {
		got, ok := e.BaselineOf(c, cells)
		want := map[string]string{"reference": "reference", "docker": "reference", "overlay": "docker"}[c.Factors["layer"]]
		if !ok || got != byKey[want+"/"+c.Factors["param.size"]] {
			t.Errorf("baseline of %s: cell %d (%v), want the %s cell of the same size", c.Key(), got, ok, want)
		}
	}
	for name, c := range map[string]struct{ src, want string }{
		"bundle sets a factor also given": {strings.Replace(src, "  hosts: [3]\n", "  hosts: [3]\n  platform: [docker]\n", 1), "l.yaml:4:3: factor platform is also set by the levels of layer"},
		"bad level in a bundle":           {strings.Replace(src, "network: bridge}", "network: weave}", 1), `l.yaml:6:41: level "docker" of layer: level "weave" of network: allowed:`},
		"built-in name":                   {strings.Replace(src, "  layer:\n", "  network:\n", 1), `l.yaml:4:3: factor "network": a factor whose levels are named sets`},
	} {
		_, err := Parse("l.yaml", []byte(c.src), nil, Machine{CPUs: 2})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", name, err, c.want)
		}
	}
}

func TestNetworkValidation(t *testing.T) {
	m := Machine{CPUs: 2}
	base := "name: n\nfactors:\n  platform: [docker]\n%s\nworkloads: [{name: tcp, type: net.tcp_stream}]\n"
	for name, c := range map[string]struct{ factors, want string }{
		"overlay needs hosts":       {"  network: [overlay]", "n.yaml:4:3: network overlay joins emulated hosts: it needs hosts 2 or more"},
		"macvlan on emulated hosts": {"  hosts: [2]\n  network: [macvlan]", "n.yaml:5:3: network macvlan is on the machine itself"},
		"vm host on hosts":          {"  hosts: [2]\n  network: [host]\n  server.platform: [vm]", "n.yaml:5:3: a virtual machine cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network"},
		"ovs parent, child in it":   {"  server.platform: [nested]\n  network: [host]\n  parent.network: [ovs]", "parent.network ovs wires the parent into Open vSwitch with the child on its engine's bridge: network must be bridge"},
		"ovs parent, two children":  {"  server.platform: [nested]\n  network: [bridge]\n  parent.network: [ovs]\n  children: [2]", "parent.network ovs wires each child's parent on its own: children must be 1"},
		"ovs parent across hosts":   {"  server.platform: [nested]\n  hosts: [2]\n  network: [bridge]\n  parent.network: [ovs]", "platform nested wires its instances' outer namespace into ovs on the machine only"},
		"host beyond hosts":         {"  hosts: [2]\n  network: [bridge]\n  server.host: [3]", "n.yaml:6:3: server is placed on emulated host 3, but the cell has hosts 2"},
		"half loopback":             {"  network: [bridge]\n  client.network: [loopback]", "network loopback puts every role of the workload in one container's namespace"},
		"bad underlay":              {"  underlay: [fast]", `n.yaml:4:14: level "fast" of underlay: want none, a rate such as 100mbit`},
		"too many pairs":            {"  pairs: [500]", `n.yaml:4:11: level "500" of pairs: want a whole number from 1 to 100`},
		"pairs with neighbours":     {"  pairs: [2]\n  neighbour: [tcp]\n  packaging: [separate-containers]", "pairs and neighbours do not combine"},
	} {
		src := strings.Replace(base, "%s", c.factors, 1)
		_, err := Parse("n.yaml", []byte(src), nil, m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", name, err, c.want)
		}
	}
	// A nested child on the bridge of a parent on Open vSwitch, either end.
	for _, f := range []string{"  server.platform: [nested]\n  client.platform: [native]\n  network: [bridge]\n  parent.network: [ovs]", "  client.platform: [nested]\n  server.platform: [native]\n  network: [bridge]\n  parent.network: [ovs]"} {
		if _, err := Parse("n.yaml", []byte(strings.Replace(strings.Replace(base, "%s", f, 1), "  platform: [docker]\n", "", 1)), nil, m); err != nil {
			t.Errorf("an OVS parent's bridged child (%q): %v", f, err)
		}
	}
	// Docker's, LXC's and podman's containers share their emulated
	// hosts' namespaces (a container's the lab adopted; by path), with
	// each other and with processes there.
	for _, f := range []string{"  hosts: [2]\n  network: [host]", "  hosts: [2]\n  network: [host]\n  client.platform: [native]", "  hosts: [2]\n  network: [host]\n  client.platform: [lxc]\n  server.platform: [podman]"} {
		if _, err := Parse("n.yaml", []byte(strings.Replace(base, "%s", f, 1)), nil, m); err != nil {
			t.Errorf("docker on its hosts' network (%q): %v", f, err)
		}
	}
	// Every machine network with a host process on one side is valid.
	ok := strings.Replace(base, "%s", "  client.platform: [native]\n  server.platform: [docker]\n  network: [bridge, bridge-default, macvlan, ovs]", 1)
	ok = strings.Replace(ok, "  platform: [docker]\n", "", 1)
	if _, err := Parse("n.yaml", []byte(ok), nil, m); err != nil {
		t.Errorf("host process to a container: %v", err)
	}
}

// "antagonist", the old word for a neighbour, is still read — in the file,
// in --set and in the baseline — as "neighbour", with a note saying where.
func TestOldWordForNeighbour(t *testing.T) {
	now, err := Parse("jha.yaml", []byte(jhaLike), nil, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Notes) != 0 {
		t.Errorf("notes on a file in the one vocabulary: %q", now.Notes)
	}
	old := strings.ReplaceAll(jhaLike, "neighbour", "antagonist") + "baseline: {antagonist: none}\n"
	then, err := Parse("jha.yaml", []byte(old), []string{"factors.antagonist.cpuset=[\"0\"]"}, Machine{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`jha.yaml:4: "antagonist" is the old word for "neighbour"; read as "neighbour"`,
		`jha.yaml:7: "antagonist.cpuset" is the old word for "neighbour"; read as "neighbour.cpuset"`,
		`jha.yaml:11: "antagonist" is the old word for "neighbour"; read as "neighbour"`,
	}
	if !slices.Equal(then.Notes, want) {
		t.Errorf("notes\n%q\nwant\n%q", then.Notes, want)
	}
	if then.Baseline[vocab.FNeighbour] != vocab.NeighbourNone {
		t.Errorf("baseline %v", then.Baseline)
	}
	a, b := now.Cells(), then.Cells()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d cells from the old word, %d from the new", len(b), len(a))
	}
	for i := range a {
		want := maps.Clone(a[i].Factors)
		if _, ok := want["neighbour.cpuset"]; ok {
			want["neighbour.cpuset"] = "0" // the --set
		}
		if !maps.Equal(b[i].Factors, want) {
			t.Errorf("cell %d: %v, want %v", i, b[i].Factors, want)
		}
	}
}
