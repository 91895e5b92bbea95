package spec

import (
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// design reads the experiment's design: its factors, exclusions and
// baseline, with the neighbours' implied levels, and bounds its size. It
// returns each factor's node, for the cells' checks.
func (p *parser) design(e *Experiment, f map[string]*yaml.Node, root *yaml.Node, m Machine) map[string]*yaml.Node {
	factorNodes := map[string]*yaml.Node{}
	if n, ok := f["factors"]; ok {
		e.Factors, factorNodes = p.factors(n, e.Workloads, m)
		p.checkBundles(e.Factors, factorNodes)
	}
	// With neighbours, the target alone (S0's Case 1) is always run: added
	// when missing, before exclusions and the baseline may name it.
	if af := findFactor(e.Factors, vocab.FNeighbour); af != nil && !contains(af.Levels, vocab.NeighbourNone) {
		af.Levels = append([]string{vocab.NeighbourNone}, af.Levels...)
	}
	if n, ok := f["exclude"]; ok {
		e.Exclude = p.excludes(n, e.Factors)
	}
	if n, ok := f["baseline"]; ok {
		e.Baseline = p.levelMap(n, "baseline", e.Factors)
	}
	// ... and it is what every interference ratio compares with.
	if findFactor(e.Factors, vocab.FNeighbour) != nil {
		if e.Baseline == nil {
			e.Baseline = map[string]string{}
		}
		if _, ok := e.Baseline[vocab.FNeighbour]; !ok {
			e.Baseline[vocab.FNeighbour] = vocab.NeighbourNone
		}
	}
	if n, ok := f["symmetric"]; ok && e.Symmetric && findFactor(e.Factors, vocab.FNeighbour) == nil {
		p.addf(n, "symmetric measures both sides of a pairing, but there is no neighbour factor naming neighbours")
	}
	if combos := factorial(e.Factors) * len(e.Workloads); combos > MaxCombinations {
		node := f["factors"]
		if node == nil {
			node = root
		}
		p.addf(node, "the factors make more than %d combinations (their levels multiplied, times the workloads): split the experiment into several files", MaxCombinations)
	}
	return factorNodes
}

// MaxCombinations bounds an experiment's full factorial before exclusions:
// expanding more would take minutes and memory before anything runs, and
// no campaign of that size finishes.
const MaxCombinations = 20000

// factorial is the number of combinations of the factors' levels, capped
// just above MaxCombinations so that it cannot overflow.
func factorial(fs []Factor) int {
	n := 1
	for _, f := range fs {
		n *= max(len(f.Levels), 1)
		if n > MaxCombinations {
			return MaxCombinations + 1
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// factors reads the factors mapping: name -> list of levels (or one level).
func (p *parser) factors(n *yaml.Node, wls []Workload, m Machine) ([]Factor, map[string]*yaml.Node) {
	nodes := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.addf(n, "factors must be a mapping of factor name to a list of levels, e.g. platform: [native, docker]")
		return nil, nodes
	}
	var out []Factor
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := nodes[k.Value]; dup {
			p.addf(k, "factor %q appears twice", k.Value)
			continue
		}
		nodes[k.Value] = k
		if v.Kind == yaml.MappingNode && k.Value != vocab.FUnderlay {
			// Kept even with problems, so the baseline and exclusions
			// that name it do not add errors of their own.
			if f, _ := p.bundle(k, v, wls, m); len(f.Levels) > 0 {
				out = append(out, f)
			}
			continue
		}
		if err := checkFactorName(k.Value, wls); err != nil {
			p.addf(k, "%v", err)
			continue
		}
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		if len(items) == 0 {
			p.addf(v, "factor %s has no levels", k.Value)
			continue
		}
		f := Factor{Name: k.Value}
		seen := map[string]string{} // level's value -> its first spelling
		for _, item := range items {
			s, ok := p.level(k.Value, item)
			if !ok {
				continue
			}
			lvl, err := checkLevel(k.Value, s, wls, m)
			if err != nil {
				p.addf(item, "%v", err)
				continue
			}
			// Parameter levels keep the user's spelling; 64KiB and 65536
			// are still the same level.
			key := lvl
			if pname, ok := strings.CutPrefix(k.Value, vocab.ParamPrefix); ok {
				key = paramLevelKey(pname, lvl, wls)
			}
			if first, dup := seen[key]; dup {
				if first == lvl {
					p.addf(item, "level %q of %s appears twice", lvl, k.Value)
				} else {
					p.addf(item, "level %q of %s appears twice (as %q)", lvl, k.Value, first)
				}
				continue
			}
			seen[key] = lvl
			f.Levels = append(f.Levels, lvl)
		}
		out = append(out, f)
	}
	return out, nodes
}

// level reads one level of a factor: a scalar, or for the underlay a
// mapping of its parts ({rate: 1gbit, delay: 24ms}) read into its words.
func (p *parser) level(factor string, item *yaml.Node) (string, bool) {
	if factor != vocab.FUnderlay || item.Kind != yaml.MappingNode {
		return p.scalar(item, "a level of "+factor)
	}
	parts := map[string]string{}
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		if !slices.Contains(vocab.UnderlayKeys, k.Value) {
			p.addf(k, "underlay: unknown part %q; allowed: %s", k.Value, strings.Join(vocab.UnderlayKeys, ", "))
			return "", false
		}
		s, ok := p.scalar(v, "underlay's "+k.Value)
		if !ok {
			return "", false
		}
		parts[k.Value] = s
	}
	return vocab.UnderlayWords(parts), true
}

// levelMap reads a {factor: level} mapping and checks both exist.
// bundle reads a factor whose levels are named sets of other factors'
// levels: "layer: {reference: {platform: native, network: host}, docker:
// {platform: docker, network: bridge}}". Its name is the user's own.
func (p *parser) bundle(k, v *yaml.Node, wls []Workload, m Machine) (Factor, bool) {
	f := Factor{Name: k.Value, Bundle: map[string]map[string]string{}}
	if checkFactorName(k.Value, wls) == nil || strings.ContainsAny(k.Value, ". +") || k.Value == ExcludeWorkload {
		p.addf(k, "factor %q: a factor whose levels are named sets of other factors' levels needs a name of its own (e.g. layer), not a built-in factor's", k.Value)
		return f, false
	}
	ok := true
	for i := 0; i+1 < len(v.Content); i += 2 {
		ln, lv := v.Content[i], v.Content[i+1]
		if _, dup := f.Bundle[ln.Value]; dup {
			p.addf(ln, "level %q of %s appears twice", ln.Value, k.Value)
			ok = false
			continue
		}
		if lv.Kind != yaml.MappingNode {
			p.addf(lv, "level %q of %s must be a mapping of factor to level, e.g. {platform: docker, network: bridge}", ln.Value, k.Value)
			ok = false
			continue
		}
		set := map[string]string{}
		for j := 0; j+1 < len(lv.Content); j += 2 {
			fk, fv := lv.Content[j], lv.Content[j+1]
			if fk.Value == vocab.FNeighbour || fk.Value == vocab.FPackaging {
				p.addf(fk, "level %q of %s: %s cannot be set by a bundle; make it a factor of its own", ln.Value, k.Value, fk.Value)
				ok = false
				continue
			}
			if err := checkFactorName(fk.Value, wls); err != nil {
				p.addf(fk, "level %q of %s: %v", ln.Value, k.Value, err)
				ok = false
				continue
			}
			sv, good := p.scalar(fv, "a level of "+fk.Value)
			if !good {
				ok = false
				continue
			}
			lvl, err := checkLevel(fk.Value, sv, wls, m)
			if err != nil {
				p.addf(fv, "level %q of %s: %v", ln.Value, k.Value, err)
				ok = false
				continue
			}
			set[fk.Value] = lvl
		}
		f.Bundle[ln.Value] = set
		f.Levels = append(f.Levels, ln.Value)
	}
	if len(f.Levels) == 0 {
		p.addf(v, "factor %s has no levels", k.Value)
		ok = false
	}
	return f, ok
}

// checkBundles rejects a factor set both by a bundle and on its own.
func (p *parser) checkBundles(fs []Factor, nodes map[string]*yaml.Node) {
	for _, f := range fs {
		done := map[string]bool{}
		for _, l := range f.Levels {
			for _, name := range sortedKeys(f.Bundle[l]) {
				if findFactor(fs, name) != nil && !done[name] {
					done[name] = true
					p.addf(nodes[name], "factor %s is also set by the levels of %s: set it in one place", name, f.Name)
				}
			}
		}
	}
}

func (p *parser) levelMap(n *yaml.Node, what string, factors []Factor) map[string]string {
	out := map[string]string{}
	if n.Kind != yaml.MappingNode {
		p.addf(n, "%s must be a mapping of factor to level, e.g. {platform: native}", what)
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := findFactor(factors, k.Value)
		if f == nil {
			p.addf(k, "%s names factor %q, which is not among the factors (%s)", what, k.Value, factorNames(factors))
			continue
		}
		s, ok := p.scalar(v, what+" level")
		if !ok {
			continue
		}
		if what == "baseline" && s == vocab.Previous {
			out[k.Value] = vocab.Previous + ":" + strings.Join(f.Levels, ",")
			continue
		}
		lvl, ok := sameLevel(f, s, p.wls)
		if !ok {
			p.addf(v, "%s names level %q of %s, which is not among its levels (%s)", what, s, k.Value, strings.Join(f.Levels, ", "))
			continue
		}
		out[k.Value] = lvl
	}
	return out
}

// sameLevel finds the level of f that s names: the same text, or for a
// parameter factor the same value spelled otherwise (1024 for 1KiB).
func sameLevel(f *Factor, s string, wls []Workload) (string, bool) {
	if contains(f.Levels, s) {
		return s, true
	}
	pname, ok := strings.CutPrefix(f.Name, vocab.ParamPrefix)
	if !ok {
		return "", false
	}
	for _, w := range wls {
		prm, ok := w.Spec.Param(pname)
		if !ok {
			continue
		}
		want, err := prm.Normalize(s)
		if err != nil {
			return "", false
		}
		for _, l := range f.Levels {
			if got, err := prm.Normalize(l); err == nil && got == want {
				return l, true
			}
		}
		return "", false
	}
	return "", false
}

func (p *parser) excludes(n *yaml.Node, factors []Factor) []map[string]string {
	if n.Kind != yaml.SequenceNode {
		p.addf(n, "exclude must be a list of {factor: level} mappings")
		return nil
	}
	var out []map[string]string
	for _, item := range n.Content {
		// An exclusion may name a workload: {workload: bonnie, network:
		// bridge} drops only that workload's combinations.
		wl, rest := "", item
		if item.Kind == yaml.MappingNode {
			rest = &yaml.Node{Kind: yaml.MappingNode, Tag: item.Tag, Line: item.Line, Column: item.Column}
			for i := 0; i+1 < len(item.Content); i += 2 {
				k, v := item.Content[i], item.Content[i+1]
				if k.Value != ExcludeWorkload {
					rest.Content = append(rest.Content, k, v)
					continue
				}
				name, ok := p.scalar(v, "exclude workload")
				if !ok {
					continue
				}
				if !p.hasWorkload(name) {
					p.addf(v, "exclude names workload %q, which is not among the workloads (%s)", name, p.workloadNames())
					continue
				}
				wl = name
			}
		}
		m := p.levelMap(rest, "exclude", factors)
		if wl != "" {
			m[ExcludeWorkload] = wl
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// ExcludeWorkload is the key with which an exclusion names a workload.
const ExcludeWorkload = "workload"

func findFactor(fs []Factor, name string) *Factor {
	for i := range fs {
		if fs[i].Name == name {
			return &fs[i]
		}
	}
	return nil
}

func factorNames(fs []Factor) string {
	if len(fs) == 0 {
		return "none declared"
	}
	n := make([]string, len(fs))
	for i, f := range fs {
		n[i] = f.Name
	}
	return strings.Join(n, ", ")
}
