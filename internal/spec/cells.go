package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/baseline"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// relevant reports whether factor name matters to workload w: a parameter
// factor only to workloads with that parameter, a role-qualified placement
// only to workloads with that role.
func relevant(name string, w Workload) bool {
	if strings.HasPrefix(name, vocab.ParamPrefix) {
		_, ok := w.Spec.Param(strings.TrimPrefix(name, vocab.ParamPrefix))
		return ok
	}
	role, _ := splitFactor(name)
	return role == "" || role == vocab.RoleNeighbour || w.Spec.HasRole(role)
}

// combinations enumerates the full factorial in file order, the first factor
// varying slowest.
func combinations(fs []Factor) []map[string]string {
	out := []map[string]string{{}}
	for _, f := range fs {
		var next []map[string]string
		for _, c := range out {
			for _, l := range f.Levels {
				m := make(map[string]string, len(c)+1)
				for k, v := range c {
					m[k] = v
				}
				m[f.Name] = l
				for k, v := range f.Bundle[l] {
					m[k] = v
				}
				next = append(next, m)
			}
		}
		out = next
	}
	return out
}

func matches(levels, pattern map[string]string) bool {
	for k, v := range pattern {
		if levels[k] != v {
			return false
		}
	}
	return true
}

// Cells expands the experiment: for each workload, every combination of the
// factors that matter to it, minus exclusions. IDs are 1-based in that order.
// With symmetric, a pairing whose mirror runs (the neighbour as target, the
// target as its neighbour) runs too, with the target's baseline: each side
// of a pair is measured as the target in turn.
func (e *Experiment) Cells() []result.Cell {
	combos := combinations(e.Factors)
	keys := factorKeys(e.Factors)
	var cells []result.Cell
	for _, w := range e.Workloads {
		for _, c := range e.workloadCells(w, combos, keys) {
			c.ID = len(cells) + 1
			cells = append(cells, c)
		}
	}
	return cells
}

// workloadCells are workload w's cells, in order: each combination not
// excluded, then the mirrors of the pairings in which w is the neighbour,
// then (when there are mirrors) w's baseline.
func (e *Experiment) workloadCells(w Workload, combos []map[string]string, keys []string) []result.Cell {
	set := &cellSet{w: w, keys: keys, seen: map[string]bool{}}
	for _, combo := range combos {
		if !e.excluded(w.Name, combo) {
			set.add(combo)
		}
	}
	// A target that runs only because of symmetry still needs its
	// baseline (the target alone under the baseline's levels).
	if e.addMirrors(set, combos) && len(e.Baseline) > 0 {
		for _, combo := range combos {
			if matches(combo, e.Baseline) {
				set.add(combo)
			}
		}
	}
	return set.cells
}

// addMirrors adds, with symmetric, the mirror of every pairing in which
// the set's workload is the neighbour: it as the target, that target as
// its neighbour. It reports whether any cell was added.
func (e *Experiment) addMirrors(set *cellSet, combos []map[string]string) bool {
	mirrored := false
	for _, t := range e.Workloads {
		if !e.Symmetric || t.Name == set.w.Name {
			continue
		}
		for _, combo := range combos {
			if combo[vocab.FNeighbour] != set.w.Name || e.excluded(t.Name, combo) {
				continue
			}
			mirror := maps.Clone(combo)
			mirror[vocab.FNeighbour] = t.Name
			mirrored = set.add(mirror) || mirrored
		}
	}
	return mirrored
}

// excluded reports whether an exclusion drops workload w under combo.
func (e *Experiment) excluded(w string, combo map[string]string) bool {
	named := map[string]string{ExcludeWorkload: w}
	for k, v := range combo {
		named[k] = v
	}
	for _, ex := range e.Exclude {
		if matches(named, ex) {
			return true
		}
	}
	return false
}

// cellSet gathers one workload's cells, each distinct cell once.
type cellSet struct {
	w     Workload
	keys  []string // the factor names a cell can carry, in file order
	seen  map[string]bool
	cells []result.Cell
}

// add adds the workload's cell under combo, keeping the levels that
// matter to it; it reports whether the cell is new.
func (s *cellSet) add(combo map[string]string) bool {
	c := result.Cell{Workload: s.w.Name, WorkloadType: s.w.Type, Factors: map[string]string{}, Params: map[string]string{}}
	for k, v := range s.w.Params {
		c.Params[k] = v
	}
	for _, name := range s.keys {
		lvl, set := combo[name]
		if !relevant(name, s.w) || !set {
			continue // a bundle level may leave a factor unset
		}
		c.Factors[name] = lvl
		if pname, ok := strings.CutPrefix(name, vocab.ParamPrefix); ok {
			prm, _ := s.w.Spec.Param(pname)
			c.Params[pname], _ = prm.Normalize(lvl)
		}
	}
	vocab.DropIrrelevant(c.Factors)
	key := c.Key()
	if s.seen[key] {
		return false
	}
	s.seen[key] = true
	s.cells = append(s.cells, c)
	return true
}

// BaselineOf returns the ID of cell c's baseline: the cell of the same
// workload whose levels equal c's except where the baseline names a level.
// ok is false when the experiment has no baseline or that cell is excluded.
func (e *Experiment) BaselineOf(c result.Cell, cells []result.Cell) (int, bool) {
	return baseline.Cell(e.Baseline, c, cells)
}

// checkCells validates what only shows once factors are combined.
func (p *parser) checkCells(e *Experiment, root *yaml.Node, factorNodes map[string]*yaml.Node, baselineNode *yaml.Node) {
	cells := e.Cells()
	if len(cells) == 0 {
		p.addf(root, "every combination of factors is excluded: nothing to run")
		return
	}
	if levels, ok := p.cellLevels(e, cells, root); ok {
		p.checkHostProcesses(e, cells, levels, root, factorNodes)
		p.checkNetworks(e, cells, levels, root, factorNodes)
	}
	if findFactor(e.Factors, vocab.FPackaging) != nil && findFactor(e.Factors, vocab.FNeighbour) == nil {
		p.addf(factorNodes[vocab.FPackaging], "factor packaging says how neighbours are packaged, but there is no neighbour factor naming them")
	}
	p.checkBaselines(e, cells, baselineNode)
}

// cellLevels parses every cell's levels, in the cells' order; false when
// one does not parse (a problem reported at the file).
func (p *parser) cellLevels(e *Experiment, cells []result.Cell, root *yaml.Node) ([]Levels, bool) {
	levels := make([]Levels, len(cells))
	ok := true
	for i, c := range cells {
		lv, err := e.LevelsOf(c)
		if err != nil {
			p.addf(root, "cell %s: %v", c.Key(), err)
			ok = false
		}
		levels[i] = lv
	}
	return levels, ok
}

// checkHostProcesses rejects a role run as a process without namespaces
// of its own on a network or storage its platform cannot give it, each
// combination once, suggesting the exclusion that drops it.
func (p *parser) checkHostProcesses(e *Experiment, cells []result.Cell, levels []Levels, root *yaml.Node, factorNodes map[string]*yaml.Node) {
	reported := map[string]bool{}
	for i, c := range cells {
		roles := e.workload(c.Workload).Spec.RoleList()
		netReported := false
		for _, role := range roles {
			pl := levels[i].Placement(role)
			d, ok := platform.Lookup(pl.Platform)
			if !ok || d.Caps.Net.OwnNetNS {
				continue
			}
			// A process without namespaces of its own has only its host's
			// network and filesystem; on a network with a host side (a
			// bridge, macvlan, OVS, an overlay's host address) it talks to
			// a container across it.
			for _, lim := range []struct {
				factor, level string
				ok            bool
				what          string
			}{
				{vocab.FNetwork, string(pl.Network), pl.Network == vocab.Host, "runs in the host's network only (or on the host side of a network shared with a container of its workload)"},
				{vocab.FStorage, string(pl.Storage), slices.Contains(d.Caps.Storages, pl.Storage), "writes to the host's own filesystem only (storage " + strings.Join(vocab.Strings(d.Caps.Storages), ", ") + ")"},
			} {
				if lim.ok {
					continue
				}
				if lim.factor == vocab.FNetwork && (netReported || pl.Network.HostSided() && chainHasOwnNetNS(levels[i], roles)) {
					continue
				}
				if lim.factor == vocab.FNetwork {
					netReported = true // one problem per cell: the first such role's
				}
				// Suggest an exclusion naming the factors that placed this
				// role (server.platform, or none when it is the default),
				// or the bundles whose levels set them.
				pf, lf := placementSource(c.Factors, role, vocab.FPlatform), placementSource(c.Factors, role, lim.factor)
				ex := exclusion(e.Factors, c.Factors, pf, lf)
				if reported[ex] {
					continue
				}
				reported[ex] = true
				p.addf(firstNode(root, factorNodes[pf], factorNodes[lf]), "platform %s %s, but a cell combines it with %s %s (%s); exclude that combination, e.g. exclude: [{%s}]",
					pl.Platform, lim.what, lim.factor, lim.level, c.Key(), ex)
			}
		}
	}
}

// firstNode is the first of nodes that is not nil, else root.
func firstNode(root *yaml.Node, nodes ...*yaml.Node) *yaml.Node {
	for _, n := range nodes {
		if n != nil {
			return n
		}
	}
	return root
}

// checkBaselines rejects a baseline that matches no cell of a workload
// measured as a target.
func (p *parser) checkBaselines(e *Experiment, cells []result.Cell, baselineNode *yaml.Node) {
	if len(e.Baseline) == 0 {
		return
	}
	for _, w := range e.Workloads {
		found, targeted := false, false
		for _, c := range cells {
			if c.Workload == w.Name {
				targeted = true
				if _, ok := e.BaselineOf(c, cells); ok {
					found = true
					break
				}
			}
		}
		// A workload excluded as a target (used only as a neighbour)
		// needs no baseline.
		if targeted && !found {
			p.addf(baselineNode, "baseline %s matches no cell of workload %s (is it excluded?)", fmtLevels(e.Baseline), w.Name)
		}
	}
}

// placementSource is the factor that sets base for role in a cell's levels
// (as placementFor resolves it), or "" when the default applies.
func placementSource(factors map[string]string, role, base string) string {
	if _, ok := factors[role+"."+base]; ok {
		return role + "." + base
	}
	if _, ok := factors[base]; ok {
		return base
	}
	return ""
}

// exclusion is an exclusion of a cell's levels of the named factors
// ("" for none), in order: "server.platform: native, network: bridge".
// A factor a bundle sets is named by the bundle's level, which is what an
// exclusion can name.
func exclusion(fs []Factor, levels map[string]string, names ...string) string {
	var parts []string
	for _, name := range names {
		if name == "" {
			continue
		}
		if findFactor(fs, name) == nil {
			for _, f := range fs {
				if _, ok := f.Bundle[levels[f.Name]][name]; ok {
					name = f.Name
					break
				}
			}
		}
		if part := name + ": " + levels[name]; !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, ", ")
}

func fmtLevels(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+": "+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (e *Experiment) workload(name string) Workload {
	for _, w := range e.Workloads {
		if w.Name == name {
			return w
		}
	}
	panic(fmt.Sprintf("spec: no workload %q", name))
}

// Workload returns the named workload of the experiment.
func (e *Experiment) Workload(name string) (Workload, bool) {
	for _, w := range e.Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// checkNetworks rejects network modes a cell's emulated hosts cannot give,
// and placements and combinations its platforms cannot run, each
// combination once, at the factor that set it.
func (p *parser) checkNetworks(e *Experiment, cells []result.Cell, levels []Levels, root *yaml.Node, factorNodes map[string]*yaml.Node) {
	r := &cellReport{p: p, root: root, nodes: factorNodes, reported: map[string]bool{}}
	ncpu := len(e.CPUs(p.machine.CPUs))
	for i, c := range cells {
		lv := levels[i]
		roles := workloadRoles(c)
		loop, chain := 0, 0
		for _, role := range roles {
			r.checkRole(c, lv, role, roles)
			if role != vocab.RoleNeighbour {
				chain++
				if lv.Placement(role).Network == vocab.Loopback {
					loop++
				}
			}
		}
		if lv.Pairs > 1 && c.Factors[vocab.FNeighbour] != "" && c.Factors[vocab.FNeighbour] != vocab.NeighbourNone {
			r.add(c, roles[0], vocab.FPairs, "pairs and neighbours do not combine: neighbours load one measured target, pairs are several")
		}
		r.checkPlatformFactors(c, lv, roles)
		r.checkSamePod(e, c, lv, roles[chain-1])
		r.checkShape(c, lv, roles, chain)
		if _, _, err := e.NeighbourImages(c); err != nil {
			r.add(c, roles[0], vocab.FPackaging, err.Error())
		}
		if loop > 0 && loop < chain {
			r.add(c, roles[0], vocab.FNetwork, "network loopback puts every role of the workload in one container's namespace: give all its roles network loopback")
		}
		r.checkPinning(c, lv, roles, ncpu)
	}
}

// cellReport reports a problem of a cell once, at the factor that set it
// (else the hosts factor, else the file).
type cellReport struct {
	p        *parser
	root     *yaml.Node
	nodes    map[string]*yaml.Node
	reported map[string]bool
}

func (r *cellReport) add(c result.Cell, role, factor, msg string) {
	if r.reported[msg] {
		return
	}
	r.reported[msg] = true
	node := r.nodes[placementSource(c.Factors, role, factor)]
	if node == nil {
		node = r.nodes[vocab.FHosts]
	}
	if node == nil {
		node = r.root
	}
	r.p.addf(node, "%s (cell %s); exclude that combination or change the levels", msg, c.Key())
}

// checkRole checks where one role of a cell is placed: its emulated host
// or node, its platform's limits and network modes, its storage.
func (r *cellReport) checkRole(c result.Cell, lv Levels, role string, roles []string) {
	hosts := lv.Hosts
	pl := lv.Placement(role)
	if h, err := strconv.Atoi(pl.Host); err == nil && h > hosts {
		r.add(c, role, vocab.FHost, fmt.Sprintf("%s is placed on emulated host %d, but the cell has hosts %d", role, h, hosts))
	}
	d, ok := platform.Lookup(pl.Platform)
	_, cluster := platform.ClusterOf(d.Caps)
	if pl.Node != "" && (!ok || !cluster) {
		r.add(c, role, vocab.FNode, fmt.Sprintf("%s names node %s, but platform %s has no nodes: node applies to a cluster platform (%s)", role, pl.Node, pl.Platform, strings.Join(clusterPlatforms(), ", ")))
	}
	if pl.Node != "" && pl.Host != "" {
		r.add(c, role, vocab.FNode, fmt.Sprintf("%s is placed both on node %s and on host %s: give one", role, pl.Node, pl.Host))
	}
	if ok && cluster {
		for _, other := range roles {
			if op := lv.Placement(other).Platform; op != pl.Platform {
				r.add(c, role, vocab.FPlatform, fmt.Sprintf("%s runs on cluster platform %s and %s on %s: every role of a cell on a cluster runs on that cluster", role, pl.Platform, other, op))
			}
		}
	}
	for _, lim := range []struct{ factor, level string }{{vocab.FCpuset, pl.Cpuset}, {vocab.FBlkioWeight, pl.BlkioWeight}, {vocab.FReadBps, pl.ReadBps}, {vocab.FWriteBps, pl.WriteBps}, {vocab.FPids, pl.Pids}} {
		if why, no := d.Caps.NoLimits[lim.factor]; ok && no && lim.level != vocab.NoLimit && lim.level != "" {
			r.add(c, role, lim.factor, fmt.Sprintf("platform %s cannot apply %s %s: %s", pl.Platform, lim.factor, lim.level, why))
		}
	}
	if ok && !d.Caps.UserImages && (c.Params[workload.ParamImage] != "" || c.Params[workload.ParamImageArchive] != "") {
		r.add(c, role, vocab.FPlatform, fmt.Sprintf("platform %s cannot run a user's image yet (image, image_archive); platforms that can: %s", pl.Platform, strings.Join(platform.NamesWhere(func(d platform.Driver) bool { return d.Caps.UserImages }), ", ")))
	}
	if !ok || !d.Caps.Net.OwnNetNS {
		return // processes in their host's namespace: checkCells
	}
	if _, err := d.ProvisionWith(pl.Network, hosts, d.Options(c.Factors)); err != nil {
		r.add(c, role, vocab.FNetwork, err.Error())
	} else if comb := d.Caps.Own.Combine; comb != nil {
		if err := comb(pl.Network, d.Options(c.Factors)); err != nil {
			r.add(c, role, vocab.FNetwork, err.Error())
		}
	}
	if !slices.Contains(d.Caps.Storages, pl.Storage) {
		r.add(c, role, vocab.FStorage, fmt.Sprintf("platform %s does not offer storage %s; it offers %s", pl.Platform, pl.Storage, strings.Join(vocab.Strings(d.Caps.Storages), ", ")))
	}
}

// checkPlatformFactors rejects a platform's own factor set away from its
// default in a cell where no role runs on a platform that declares it.
func (r *cellReport) checkPlatformFactors(c result.Cell, lv Levels, roles []string) {
	for _, name := range sortedKeys(c.Factors) {
		level := c.Factors[name]
		_, f, ok := platform.FactorOf(name)
		if !ok || level == f.Default {
			continue
		}
		used := false
		for _, role := range roles {
			d, ok := platform.Lookup(lv.Placement(role).Platform)
			used = used || (ok && d.Declares(name))
		}
		if !used {
			owners := platform.Declarers(name)
			noun := "platform"
			if len(owners) > 1 {
				noun = "platforms"
			}
			r.add(c, roles[0], name, fmt.Sprintf("%s applies only to %s %s, and no role of this cell runs there", name, noun, strings.Join(owners, ", ")))
		}
	}
}

// checkShape rejects combinations of pairs, instances, neighbours and a
// lifecycle workload that do not go together.
func (r *cellReport) checkShape(c result.Cell, lv Levels, roles []string, chain int) {
	if ws, ok := workload.Lookup(c.WorkloadType); ok && ws.Trial.Lifecycle {
		switch {
		case lv.Pairs > 1:
			r.add(c, roles[0], vocab.FPairs, fmt.Sprintf("%s times the lives of its hosting entities: give their number as instances, not pairs", c.WorkloadType))
		case c.Factors[vocab.FNeighbour] != "" && c.Factors[vocab.FNeighbour] != vocab.NeighbourNone:
			r.add(c, roles[0], vocab.FNeighbour, fmt.Sprintf("%s times the lives of its hosting entities: it has no measured run for neighbours to load", c.WorkloadType))
		}
	}
	if n := lv.Instances; n > 1 {
		switch {
		case chain > 1:
			r.add(c, roles[0], vocab.FInstances, fmt.Sprintf("instances copies a single-role workload; %s is a chain of %d roles: use pairs for several client/server chains", c.WorkloadType, chain))
		case lv.Pairs > 1:
			r.add(c, roles[0], vocab.FInstances, "instances and pairs do not combine: instances are copies of a single-role workload, pairs of a client/server chain")
		case c.Factors[vocab.FNeighbour] != "" && c.Factors[vocab.FNeighbour] != vocab.NeighbourNone:
			r.add(c, roles[0], vocab.FInstances, "instances and neighbours do not combine: neighbours load one measured target, instances are several")
		}
	}
}

// checkSamePod rejects neighbours in the target's pod (packaging
// same-pod) where the target's platform has no pods, where they are
// placed elsewhere than the pod, or are of a kind a pod cannot hold.
func (r *cellReport) checkSamePod(e *Experiment, c result.Cell, lv Levels, driver string) {
	if c.Factors[vocab.FPackaging] != vocab.PackPod {
		return
	}
	target, nb := lv.Placement(driver), lv.Placement(vocab.RoleNeighbour)
	if d, ok := platform.Lookup(target.Platform); ok && !d.Caps.Pods {
		r.add(c, driver, vocab.FPackaging, fmt.Sprintf("packaging %s runs the neighbours in containers of the target's pod, and platform %s has no pods (platforms with pods: %s): use packaging %s or %s",
			vocab.PackPod, target.Platform, strings.Join(platform.NamesWhere(func(d platform.Driver) bool { return d.Caps.Pods }), ", "), vocab.PackSame, vocab.PackSeparate))
		return
	}
	for _, f := range []struct{ factor, target, nb string }{
		{vocab.FPlatform, target.Platform, nb.Platform}, {vocab.FNetwork, string(target.Network), string(nb.Network)},
		{vocab.FNode, target.Node, nb.Node}, {vocab.FHost, target.Host, nb.Host}, {vocab.FStorage, string(target.Storage), string(nb.Storage)},
	} {
		if f.nb != f.target {
			if f.target == "" {
				f.target = "unset"
			}
			r.add(c, vocab.RoleNeighbour, f.factor, fmt.Sprintf("packaging %s runs the neighbours in the target's pod, so they have its %s (%s), not %s %q: leave %s.%s out or use packaging %s",
				vocab.PackPod, f.factor, f.target, vocab.RoleNeighbour+"."+f.factor, f.nb, vocab.RoleNeighbour, f.factor, vocab.PackSeparate))
		}
	}
	for _, name := range vocab.NeighboursOf(c.Factors[vocab.FNeighbour]) {
		w, ok := e.Workload(name)
		if !ok {
			continue
		}
		if ws, ok := workload.Lookup(w.Type); ok && len(ws.RoleList()) > 1 {
			r.add(c, driver, vocab.FPackaging, fmt.Sprintf("neighbour %s (%s) is a client and a server, and packaging %s runs one-role neighbours (its containers start at once, a client before its server): use packaging %s", name, w.Type, vocab.PackPod, vocab.PackSeparate))
		}
	}
}

// checkPinning rejects a pinning the cell's cores or workload cannot take.
func (r *cellReport) checkPinning(c result.Cell, lv Levels, roles []string, ncpu int) {
	if msg := pinningProblem(lv, roles, ncpu); msg != "" {
		r.add(c, roles[0], vocab.FPinning, msg)
	} else if ws, ok := workload.Lookup(c.WorkloadType); ok && ws.Trial.Lifecycle && lv.Pinning != vocab.PinNone {
		r.add(c, roles[0], vocab.FPinning, fmt.Sprintf("%s times the lives of its hosting entities; pinning does not apply to it", c.WorkloadType))
	}
}

// workloadRoles lists the roles a cell places: its workload's chain, and the
// neighbours' when they run in instances of their own.
func workloadRoles(c result.Cell) []string {
	var roles []string
	if ws, ok := workload.Lookup(c.WorkloadType); ok {
		roles = ws.RoleList()
	}
	if vocab.Apart(c.Factors[vocab.FPackaging]) {
		roles = append(roles, vocab.RoleNeighbour)
	}
	return roles
}

// chainHasOwnNetNS reports whether any role of the chain runs in a
// namespace of its own (a container), across whose network a host process
// can talk to it.
func chainHasOwnNetNS(lv Levels, roles []string) bool {
	for _, r := range roles {
		if d, ok := platform.Lookup(lv.Placement(r).Platform); ok && d.Caps.Net.OwnNetNS {
			return true
		}
	}
	return false
}

// factorKeys lists the factor names a cell can carry: every factor, and
// the factors bundles set, in file order.
func factorKeys(fs []Factor) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range fs {
		if !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, f.Name)
		}
		for _, l := range f.Levels {
			for _, k := range sortedKeys(f.Bundle[l]) {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// clusterPlatforms lists the platforms that bring their own nodes.
func clusterPlatforms() []string {
	var out []string
	for _, d := range platform.Drivers() {
		if _, ok := platform.ClusterOf(d.Caps); ok {
			out = append(out, d.Name)
		}
	}
	return out
}
