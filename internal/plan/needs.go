package plan

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Needs are what a campaign's cells need prepared before the first trial.
type Needs struct {
	// Platforms by name, with what each must provide.
	Platforms map[string]*PlatformNeeds
	// Hosts is the most emulated hosts a cell has (1: none).
	Hosts int
	// Lab are the modes the network lab must build, sorted.
	Lab []vocab.Network
	// Delays says a cell's underlay delays, jitters or loses packets: the
	// lab puts a delay line between each emulated host and the switch.
	Delays bool
	// HostNS are the platforms whose instances share emulated hosts'
	// namespaces by holding them (Capabilities.Net.Holder), sorted: the
	// lab adopts the first's.
	HostNS []string
}

// PlatformNeeds is what one platform must provide, each list sorted.
type PlatformNeeds struct {
	Networks []vocab.Network // as Provision asks the platform
	Storages []vocab.Storage
	Tools    []string         // binaries the workloads run there
	Images   []platform.Image // users' images instances run from there
	// Hosts is the most nodes a cell asks of a cluster platform.
	Hosts int
	// Options are the levels of the platform's own factors the cells use:
	// per factor, sorted.
	Options map[string][]string
	// Spans are what the cells ask of a cluster platform's nodes: each
	// role's own factors' levels with its cell's nodes, once each.
	Spans []platform.Span
	// Delays: a cell on this cluster platform delays, jitters or loses
	// packets on the links between its nodes.
	Delays bool
}

// PlatformNames lists the platforms needed, sorted.
func (n Needs) PlatformNames() []string {
	out := make([]string, 0, len(n.Platforms))
	for name := range n.Platforms {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// NeedsLab reports whether the campaign needs the network lab.
func (n Needs) NeedsLab() bool { return n.Hosts > 1 || len(n.Lab) > 0 }

// Collect gathers what cells need.
func Collect(cells []*Cell) Needs {
	n := Needs{Platforms: map[string]*PlatformNeeds{}, Hosts: 1}
	need := func(r Role, ws ...*workload.Spec) {
		pn := n.Platforms[r.Platform]
		if pn == nil {
			pn = &PlatformNeeds{}
			n.Platforms[r.Platform] = pn
		}
		pn.Networks = addSorted(pn.Networks, r.Provision.Platform)
		for k, v := range r.Options {
			if pn.Options == nil {
				pn.Options = map[string][]string{}
			}
			pn.Options[k] = addSorted(pn.Options[k], v)
		}
		pn.Storages = addSorted(pn.Storages, r.Storage)
		if r.Image != nil && !slices.Contains(pn.Images, *r.Image) {
			pn.Images = append(pn.Images, *r.Image)
		}
		for _, w := range ws {
			for _, t := range w.Tools {
				pn.Tools = addSorted(pn.Tools, t.Binary)
			}
		}
		for _, m := range []vocab.Network{r.Provision.Wire, r.Provision.Plug} {
			if m != "" {
				n.Lab = addSorted(n.Lab, m)
			}
		}
		if r.Provision.HostNS && r.Driver.Caps.Net.Holder != nil {
			n.HostNS = addSorted(n.HostNS, r.Platform)
		}
	}
	for _, c := range cells {
		if isCluster(c.Driver().Driver) {
			// Its nodes are the cluster's, not emulated hosts.
			pn := n.Platforms[c.Driver().Platform]
			if pn == nil {
				pn = &PlatformNeeds{}
				n.Platforms[c.Driver().Platform] = pn
			}
			pn.Hosts = max(pn.Hosts, c.Hosts)
			pn.Delays = pn.Delays || c.Underlay.Delays()
			for _, r := range c.Chain {
				if s := (platform.Span{Options: r.Options, Hosts: max(c.Hosts, 1)}); !slices.ContainsFunc(pn.Spans, s.Equal) {
					pn.Spans = append(pn.Spans, s)
				}
			}
		} else {
			n.Hosts = max(n.Hosts, c.Hosts)
			n.Delays = n.Delays || c.Underlay.Delays()
		}
		var nb []*workload.Spec
		for _, s := range c.Neighbours.Specs {
			typ, params, _ := strings.Cut(s, "=")
			if ws, ok := workload.Lookup(typ); ok {
				var p map[string]string
				_ = json.Unmarshal([]byte(params), &p)
				nb = append(nb, ws.For(p))
			}
		}
		for i, r := range c.Chain {
			ws := []*workload.Spec{c.Workload.For(c.Cell.Params)}
			// Neighbours in the same instance run in the driver's.
			if i == len(c.Chain)-1 && !c.Neighbours.Apart() {
				ws = append(ws, nb...)
			}
			need(r, ws...)
		}
		if c.Neighbours.Apart() {
			need(c.Neighbours.Role, nb...)
			for _, img := range c.Neighbours.Images {
				r := c.Neighbours.Role
				r.Image = img
				need(r)
			}
		}
	}
	return n
}

func addSorted[T ~string](s []T, v T) []T {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}
