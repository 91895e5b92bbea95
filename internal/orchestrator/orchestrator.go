// Package orchestrator runs a campaign: it expands an experiment into cells
// and a seeded, interleaved trial order, prepares the platforms, runs each
// trial (server first, readiness, then client) under a timeout, and hands
// every finished trial to a Sink the moment it ends. A failed or hung
// workload is a failed trial with its reason; the campaign goes on.
package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Sink receives each trial the moment it ends (the store commits it).
type Sink func(result.Trial) error

// Options configure one campaign run.
type Options struct {
	Experiment *spec.Experiment
	CampaignID string
	Cells      []result.Cell // as expanded by Experiment.Cells()
	Platforms  map[string]platform.Platform
	Sink       Sink
	// Done holds seqs already recorded, when resuming an interrupted campaign.
	Done map[int]bool
	// Prepared is called once platforms are ready, with their descriptions.
	Prepared func(info map[string]string)
	Progress *Progress
	// CleanupTimeout bounds removal of what a trial or campaign created,
	// which runs even after ctx is cancelled.
	CleanupTimeout time.Duration
	// Binary is the ctrbench executable, run for helper agents such as
	// the WireGuard tunnel; default: this process's own.
	Binary string

	// runToken makes instance names unique per invocation, so a resumed
	// campaign never collides with a leftover of the interrupted one.
	runToken string
	// cgroupParent is the emulated machine's cgroup, "" for none.
	cgroupParent string
	// lab holds the networks ctrbench wires itself (emulated hosts,
	// macvlan, OVS, overlays); nil when no cell needs one.
	lab *netlab.Lab
}

// Summary counts what a run did.
type Summary struct {
	Planned, Ran, OK, Failed int
	Interrupted              bool
}

// ErrInterrupted is returned when ctx ended before the campaign finished.
var ErrInterrupted = errors.New("interrupted")

// Run executes the campaign.
func Run(ctx context.Context, o Options) (Summary, error) {
	e := o.Experiment
	tok := make([]byte, 2)
	_, _ = rand.Read(tok)
	o.runToken = hex.EncodeToString(tok)
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = 60 * time.Second
	}
	cells := map[int]result.Cell{}
	ids := make([]int, 0, len(o.Cells))
	for _, c := range o.Cells {
		cells[c.ID] = c
		ids = append(ids, c.ID)
	}
	plan := spec.Order(ids, e.Repetitions, e.Warmup, e.Seed)
	sum := Summary{Planned: len(plan)}

	// The emulated machine: one cgroup every instance is placed under.
	if env := e.Envelope; !env.IsZero() {
		o.cgroupParent = "ctrbench/" + o.CampaignID + "/machine"
		g, err := cgroup.Create(o.cgroupParent, cgroup.Spec{CPUs: env.CPUs, Cpuset: env.Cpuset, MemoryBytes: env.MemoryBytes, Always: true})
		if err != nil {
			return sum, fmt.Errorf("emulated machine: %w", err)
		}
		// Removed after the platforms have removed their instances.
		defer func() {
			_ = g.Remove()
			cgroup.RemoveTree("ctrbench/" + o.CampaignID)
		}()
	}
	used, err := o.prepare(ctx)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.CleanupTimeout)
		defer cancel()
		for _, name := range used {
			if err := o.Platforms[name].Close(cctx); err != nil {
				fmt.Fprintf(os.Stderr, "ctrbench: cleaning up platform %s: %v\n", name, err)
			}
		}
		if o.lab != nil {
			if err := o.lab.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "ctrbench: removing the network lab: %v\n", err)
			}
		}
	}()
	if err != nil {
		return sum, err
	}

	todo := 0
	for _, pt := range plan {
		if !o.Done[pt.Seq] {
			todo++
		}
	}
	o.Progress.Begin(len(plan), todo)
	for _, pt := range plan {
		if o.Done[pt.Seq] {
			continue
		}
		if ctx.Err() != nil {
			sum.Interrupted = true
			break
		}
		cell := cells[pt.CellID]
		o.Progress.Start(pt, cell)
		t := o.trial(ctx, cell, pt)
		if ctx.Err() != nil {
			// The trial was cut short by Ctrl-C, not by its workload: it is
			// not a result, and a resumed campaign runs it again.
			sum.Interrupted = true
			break
		}
		if err := o.Sink(t); err != nil {
			return sum, fmt.Errorf("recording trial %d: %w", pt.Seq, err)
		}
		sum.Ran++
		if t.Status == result.OK {
			sum.OK++
		} else {
			sum.Failed++
		}
		o.Progress.End(pt, cell, t)
	}
	o.Progress.Finish()
	if sum.Interrupted {
		return sum, ErrInterrupted
	}
	return sum, nil
}

// prepare readies each platform the cells use, with the networks and tools
// they need there. It returns the names of platforms to close.
func (o *Options) prepare(ctx context.Context) ([]string, error) {
	nets := map[string]map[string]bool{}
	tools := map[string]map[string]bool{}
	storages := map[string]map[string]bool{}
	maxHosts := 1
	labModes := map[string]bool{}
	need := func(pl spec.Placement, hosts int, ws ...*workload.Spec) {
		if nets[pl.Platform] == nil {
			nets[pl.Platform], tools[pl.Platform], storages[pl.Platform] = map[string]bool{}, map[string]bool{}, map[string]bool{}
		}
		network, wired := platformNet(pl, hosts)
		nets[pl.Platform][network] = true
		if wired != "" {
			labModes[wired] = true
		}
		maxHosts = max(maxHosts, hosts)
		storages[pl.Platform][pl.Storage] = true
		for _, w := range ws {
			for _, t := range w.Tools {
				tools[pl.Platform][t.Binary] = true
			}
		}
	}
	for _, c := range o.Cells {
		ws, _ := workload.Lookup(c.WorkloadType)
		var neighbours []*workload.Spec
		for _, name := range spec.Antagonists(c.Factors[spec.FAntagonist]) {
			if w, ok := o.Experiment.Workload(name); ok {
				neighbours = append(neighbours, w.Spec)
			}
		}
		roles := ws.RoleList()
		hosts := spec.Hosts(c.Factors)
		for i, role := range roles {
			// Neighbours in the same container run in the driver's instance.
			if i == len(roles)-1 && c.Factors[spec.FPackaging] == spec.PackSame {
				need(spec.PlacementFor(c.Factors, role), hosts, append([]*workload.Spec{ws}, neighbours...)...)
				continue
			}
			need(spec.PlacementFor(c.Factors, role), hosts, ws)
		}
		if c.Factors[spec.FPackaging] == spec.PackSeparate {
			need(spec.PlacementFor(c.Factors, spec.RoleAntagonist), hosts, neighbours...)
		}
	}
	var used []string
	info := map[string]string{}
	if maxHosts > 1 || len(labModes) > 0 {
		if err := o.buildLab(ctx, maxHosts, sortedKeys(labModes)); err != nil {
			return used, err
		}
		for k, v := range o.lab.Info() {
			info["net."+k] = v
		}
	}
	for _, name := range sortedSet(nets) {
		p, ok := o.Platforms[name]
		if !ok {
			return used, fmt.Errorf("platform %q is not available", name)
		}
		used = append(used, name)
		s := platform.Setup{
			CampaignID:   o.CampaignID,
			Labels:       o.labels(),
			Networks:     sortedKeys(nets[name]),
			Tools:        sortedKeys(tools[name]),
			Storages:     sortedKeys(storages[name]),
			Progress:     o.Progress.Notes(),
			CgroupParent: o.cgroupParent,
		}
		if err := p.Prepare(ctx, s); err != nil {
			return used, fmt.Errorf("preparing platform %s: %w", name, err)
		}
		for k, v := range p.Info() {
			info[k] = v
		}
	}
	if o.Prepared != nil {
		o.Prepared(info)
	}
	return used, nil
}

func (o *Options) labels() map[string]string {
	return map[string]string{
		platform.LabelManaged:  "true",
		platform.LabelCampaign: o.CampaignID,
		platform.LabelOwnerPID: strconv.Itoa(os.Getpid()),
	}
}

func sortedSet[V any](m map[string]V) []string { return sortedKeys(m) }

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// Discard is a progress writer that prints nothing.
var Discard io.Writer = io.Discard
