// Package plan resolves a cell of an experiment into what a trial runner
// starts: for every role its platform driver, emulated host, how it gets its
// network, its storage, limits and counters; for every client the address
// it reaches its server at and where that server listens; the neighbours and
// how they are packaged. It is pure — it starts nothing and reads no machine
// state — so every placement rule is tested without Docker; what only exists
// once instances run (an address Docker assigned) stays symbolic (Addr).
package plan

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Role is one role of a cell, placed.
type Role struct {
	Name     string // server, client, main, pong…, or neighbour
	Platform string
	Driver   platform.Driver
	// Host is the emulated host the role runs on; 0 is the machine itself.
	// On a cluster platform it is the node (1-based), or Node names one.
	Host      int
	Node      string
	Network   vocab.Network      // as the cell asks
	Provision platform.Provision // how the platform gets it
	Storage   vocab.Storage
	Limits    platform.Limits
	// Options are the levels of the platform's own factors (the nested
	// platform's children, parent network…), defaults filled.
	Options map[string]string
	// Counters are the counters that are the instance's own: its cgroup
	// (a platform giving each instance one) and its network namespace (one
	// of its own, not the host's network).
	Counters invocation.Counters
	// Image is the user's image the role runs from (a workload's image or
	// image_archive parameter); nil: the agent image.
	Image *platform.Image
}

// RootNS reports whether the role shares the machine's own network
// namespace: a process on the machine, or an instance on its host network.
func (r Role) RootNS() bool {
	if isCluster(r.Driver) {
		return false // a node's host network is the node's
	}
	if !r.Driver.Caps.Net.OwnNetNS {
		return r.Host == 0
	}
	n := r.Network
	if seen := r.Driver.Caps.Own.Seen; seen != nil {
		n = seen(n, r.Options)
	}
	return n == vocab.Host && !r.InHostNS()
}

// InHostNS reports whether the role runs in an emulated host's namespace
// (InstanceSpec.NetNS): a process there, or a container sharing it.
func (r Role) InHostNS() bool { return r.Provision.HostNS && r.Host > 0 }

// Neighbours are the neighbours of a cell.
type Neighbours struct {
	// Specs are the neighbours as the agent takes them: "TYPE=PARAMS_JSON"
	// with their parameters from the file, or "idle".
	Specs []string
	// Separate: each runs in an instance of its own, placed as Role, from
	// Images[i] (nil: ctrbench's agent image); else all run in the
	// measured role's instance.
	Separate bool
	// Beside: each runs in a container of its own in the measured role's
	// pod (packaging same-pod), with Role's limits, from Images[i].
	Beside bool
	Role   Role
	Images []*platform.Image
	// Ends, for a separate neighbour whose workload is a client and a
	// server on one TCP port (S0's netperf N), are its roles, server
	// first: each end runs in an instance of its own, placed as Role, the
	// client reaching the server as Link says (across the cell's network,
	// as S0's crossed the bridge). Nil: every role in one instance, over
	// loopback.
	Ends [][]string
	Link Link
}

// Apart reports whether the neighbours run apart from the measured role's
// agent: in instances of their own, or in containers beside it.
func (n Neighbours) Apart() bool { return n.Separate || n.Beside }

// Cell is a cell resolved for running.
type Cell struct {
	result.Cell
	Workload *workload.Spec
	Params   string // the workload's parameters as JSON, as the agent takes them
	// Levels are the cell's levels, parsed: the fields below that say its
	// shape, underlay, pinning and machine quota are taken from them.
	Levels spec.Levels
	// Chain is the workload's roles, servers first and the measured one
	// (the driver) last; Links[i] is how Chain[i+1] reaches Chain[i].
	Chain []Role
	Links []Link
	// Pairs is how many copies of the chain run at once: client/server
	// pairs, or (Instances) copies of a single-role workload.
	Pairs      int
	Instances  bool
	Hosts      int            // emulated hosts (1: the machine alone)
	Underlay   vocab.Underlay // the underlay: its rate, delay, jitter and loss (nothing unless the cell names them)
	Neighbours Neighbours
	// CPUs are the cores the campaign may use: the emulated machine's
	// cpuset, else the machine's. Pinning places each copy's roles on
	// them (S4).
	CPUs    []int
	Pinning vocab.Pinning
	// MachineCPUs is the emulated machine's CPU quota in cores for this
	// cell (machine.cpus, else the machine mapping's cpus; 0: none).
	MachineCPUs float64
	// Publish are the ports a server reached through a published port
	// listens on besides PublishedPort (its agent's), which its engine
	// publishes too.
	Publish []vocab.Port
	// Ready is how an orchestrator tells that the workload's server is
	// ready (workload.Serves.Ready), for its pod's readiness probe; nil
	// when only the agent can.
	Ready *vocab.Probe
}

// machineCPUs is how many CPUs the machine has.
var machineCPUs = runtime.NumCPU

// Pinned is role j of the chain (0: the first server; the driver last) in
// copy p as the cell's pinning places it: its cpuset is the core it gets.
// Without pinning the role is unchanged.
//
//	same-core       copy p's roles all on core p mod n
//	separate-cores  copy p's role j on core (p·k + j) mod n (k roles): a
//	                pair's roles on different cores while k ≤ n
//	spread          every instance round-robin: the same formula, for
//	                single-role copies too
func (c *Cell) Pinned(r Role, p, j int) Role {
	n := len(c.CPUs)
	if n == 0 {
		return r
	}
	k := len(c.Chain)
	switch c.Pinning {
	case vocab.PinSameCore:
		r.Limits.Cpuset = strconv.Itoa(c.CPUs[p%n])
	case vocab.PinSeparate, vocab.PinSpread:
		r.Limits.Cpuset = strconv.Itoa(c.CPUs[(p*k+j)%n])
	}
	return r
}

// Driver is the measured role.
func (c *Cell) Driver() Role { return c.Chain[len(c.Chain)-1] }

// Resolve places every role of cell c of experiment e.
func Resolve(e *spec.Experiment, c result.Cell) (*Cell, error) {
	ws, ok := workload.Lookup(c.WorkloadType)
	if !ok {
		return nil, fmt.Errorf("unknown workload type %q", c.WorkloadType)
	}
	params, err := json.Marshal(c.Params)
	if err != nil {
		return nil, err
	}
	lv, err := e.LevelsOf(c)
	if err != nil {
		return nil, err
	}
	pc := &Cell{Cell: c, Workload: ws, Params: string(params), Levels: lv, Pairs: lv.Pairs, Hosts: lv.Hosts, Underlay: lv.Underlay,
		Pinning: lv.Pinning, CPUs: e.CPUs(machineCPUs()), MachineCPUs: lv.MachineCPUs}
	if n := lv.Instances; n > 1 {
		pc.Pairs, pc.Instances = n, true
	}
	for _, name := range ws.RoleList() {
		r, err := place(c, lv, name)
		if err != nil {
			return nil, err
		}
		r.Image = userImage(ws.ImageOf(c.Params, name))
		pc.Chain = append(pc.Chain, r)
	}
	for i := range pc.Chain[:len(pc.Chain)-1] {
		l, err := link(pc.Chain[i], pc.Chain[i+1], c.Factors)
		if err != nil {
			return nil, err
		}
		if l.Target.Kind == Published {
			if !ws.Publishable() {
				return nil, fmt.Errorf("network %s publishes the %s's ports, and %s's servers listen on ports chosen as they run (or ones it cannot name): use it with %s", l.Target.Network, pc.Chain[i].Name, ws.Type, strings.Join(publishable(), ", "))
			}
			pc.Publish = morePorts(ws, c.Params)
			for _, m := range pc.Publish {
				if m == (vocab.Port{Number: PublishedPort, Proto: "tcp"}) {
					return nil, fmt.Errorf("network %s: the %s listens on port %s, which its agent takes on a published network: give it another port", l.Target.Network, pc.Chain[i].Name, m)
				}
			}
		}
		pc.Links = append(pc.Links, l)
	}
	if err := delaysWhere(pc); err != nil {
		return nil, err
	}
	if ws.Serves.Ready != nil && len(pc.Chain) > 1 {
		pc.Ready = ws.Serves.Ready(workload.Values(c.Params))
	}
	if pc.Neighbours, err = neighbours(e, c, lv); err != nil {
		return nil, err
	}
	host, each, err := e.NeighbourImages(c)
	if err != nil {
		return nil, err
	}
	if img := userImage(host.Ref, host.Archive); img != nil {
		pc.Chain[len(pc.Chain)-1].Image = img
	}
	for _, n := range each {
		pc.Neighbours.Images = append(pc.Neighbours.Images, userImage(n.Ref, n.Archive))
	}
	return pc, nil
}

// delaysWhere refuses an underlay that delays, jitters or loses packets
// where there is no underlay of ctrbench's to do it on: emulated hosts'
// links carry it (the delay line between each host and the switch), a
// cluster platform's own nodes do not.
func delaysWhere(c *Cell) error {
	if !c.Underlay.Delays() {
		return nil
	}
	if d := c.Driver(); isCluster(d.Driver) {
		if cl, _ := platform.ClusterOf(d.Driver.Caps); !cl.Delays() {
			return fmt.Errorf("underlay %q: platform %s's nodes are linked by its own network, which ctrbench shapes in rate but does not delay; delay, jitter and loss are for emulated hosts (hosts ≥ 2 on the other platforms) and the platforms that delay their nodes' links (%s)", c.Underlay, d.Platform, strings.Join(platform.NamesWhere(func(d platform.Driver) bool {
				cl, ok := platform.ClusterOf(d.Caps)
				return ok && cl.Delays()
			}), ", "))
		}
		if c.Hosts < 2 {
			return fmt.Errorf("underlay %q delays the links between nodes, and this cell's pods are on one: add hosts: 2", c.Underlay)
		}
		return nil
	}
	if c.Hosts < 2 {
		return fmt.Errorf("underlay %q delays the links between emulated hosts, and this cell has none: add hosts: 2 (or more)", c.Underlay)
	}
	return nil
}

// ResolveAll resolves every cell.
func ResolveAll(e *spec.Experiment, cells []result.Cell) ([]*Cell, error) {
	out := make([]*Cell, 0, len(cells))
	for _, c := range cells {
		pc, err := Resolve(e, c)
		if err != nil {
			return nil, fmt.Errorf("cell %d (%s): %w", c.ID, c.Key(), err)
		}
		out = append(out, pc)
	}
	return out, nil
}

// place resolves one role from the cell's levels, which place it on its
// platform and emulated host.
func place(c result.Cell, lv spec.Levels, name string) (Role, error) {
	pl := lv.Placement(name)
	d, ok := platform.Lookup(pl.Platform)
	if !ok {
		return Role{}, fmt.Errorf("no platform %q", pl.Platform)
	}
	r := Role{Name: name, Platform: pl.Platform, Driver: d, Network: pl.Network, Storage: pl.Storage, Options: d.Options(c.Factors)}
	hosts := lv.Hosts
	if hosts > 1 {
		r.Host = lv.HostOf(name)
	}
	if isCluster(d) {
		r.Host = lv.HostOf(name)
		if r.Node = pl.Node; r.Node != "" {
			r.Host = 0
		}
	}
	var err error
	if r.Provision, err = d.ProvisionWith(pl.Network, hosts, r.Options); err != nil {
		return Role{}, fmt.Errorf("%s: %w", name, err)
	}
	r.Limits = pl.Limits
	r.Counters = invocation.Counters{Cgroup: d.Caps.OwnCgroup, Netns: d.Caps.Net.OwnNetNS && pl.Network != vocab.Host}
	return r, nil
}

// neighbours resolves a cell's neighbours, placed as its levels say.
func neighbours(e *spec.Experiment, c result.Cell, lv spec.Levels) (Neighbours, error) {
	var n Neighbours
	level := c.Factors[vocab.FNeighbour]
	if level == vocab.NeighbourIdle {
		n.Specs = []string{vocab.NeighbourIdle}
	}
	for _, name := range vocab.NeighboursOf(level) {
		w, ok := e.Workload(name)
		if !ok {
			continue
		}
		p, err := json.Marshal(w.Params)
		if err != nil {
			return n, err
		}
		n.Specs = append(n.Specs, w.Type+"="+string(p))
	}
	n.Separate = len(n.Specs) > 0 && c.Factors[vocab.FPackaging] == vocab.PackSeparate
	n.Beside = len(n.Specs) > 0 && c.Factors[vocab.FPackaging] == vocab.PackPod
	if n.Beside {
		// In the target's pod: only their limits are their own.
		r, err := place(c, lv, vocab.RoleNeighbour)
		n.Role = r
		return n, err
	}
	if !n.Separate {
		return n, nil
	}
	r, err := place(c, lv, vocab.RoleNeighbour)
	if err != nil {
		return n, err
	}
	n.Role = r
	n.Ends = make([][]string, len(n.Specs))
	for i, sp := range n.Specs {
		typ, _, _ := strings.Cut(sp, "=")
		if ws, ok := workload.Lookup(typ); ok && ws.Serves.OneTCPPort && len(ws.RoleList()) == 2 {
			n.Ends[i] = ws.RoleList()
		}
	}
	if n.Link, err = link(r, r, c.Factors); err != nil {
		return n, fmt.Errorf("the neighbours' two ends: %w", err)
	}
	return n, nil
}

// userImage is a user's image a role runs from; nil for none.
func userImage(ref, archive string) *platform.Image {
	if ref == "" && archive == "" {
		return nil
	}
	return &platform.Image{Ref: ref, Archive: archive}
}

// publishable lists the workload types a published network can carry.
func publishable() []string {
	var out []string
	for _, t := range workload.Types() {
		if ws, _ := workload.Lookup(t); ws.Publishable() {
			out = append(out, t)
		}
	}
	return out
}

// morePorts are the ports a published server listens on besides
// PublishedPort (workload.Spec.MorePorts), a number of 0 being
// PublishedPort's. params are the cell's, resolved once by spec (and so
// stored), not resolved again here.
func morePorts(ws *workload.Spec, params map[string]string) []vocab.Port {
	if ws.Serves.MorePorts == nil {
		return nil
	}
	var out []vocab.Port
	for _, p := range ws.Serves.MorePorts(workload.Values(params)) {
		if p.Number == 0 {
			p.Number = PublishedPort
		}
		out = append(out, p)
	}
	return out
}

// isCluster reports whether d brings a cell's hosts itself (a cluster).
func isCluster(d platform.Driver) bool {
	_, ok := platform.ClusterOf(d.Caps)
	return ok
}
