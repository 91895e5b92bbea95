package spec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// topKeys are the keys an experiment file may have, in documentation order.
var topKeys = []string{"name", "description", "seed", "repetitions", "warmup", "timeout", "retries", "budget", "machine", "symmetric", "factors", "exclude", "baseline", "workloads"}

// adaptiveKeys are the keys of repetitions as a mapping.
var adaptiveKeys = []string{"min", "max", "rci", "metric"}

var workloadKeys = []string{"name", "type", "params"}

// Load reads, overrides (--set) and validates an experiment file.
func Load(path string, sets []string, m Machine) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading experiment file: %w", err)
	}
	return Parse(path, data, sets, m)
}

// parser collects problems while walking the YAML tree.
type parser struct {
	file     string
	machine  Machine // the machine validation checks levels against
	problems Problems
	// wls are the workloads read so far, for interpreting parameter levels.
	wls []Workload
	// origin maps a node that came from --set to its expression.
	origin map[*yaml.Node]string
}

func (p *parser) addf(n *yaml.Node, format string, a ...any) {
	pr := Problem{File: p.file, Msg: fmt.Sprintf(format, a...)}
	if n != nil {
		if s, ok := p.origin[n]; ok {
			pr.Set = s
		} else {
			pr.Line, pr.Col = n.Line, n.Column
		}
	}
	p.problems = append(p.problems, pr)
}

// Parse validates an experiment file's content. sets are "path=value"
// overrides applied before validation. Every problem is reported at once.
func Parse(path string, data []byte, sets []string, m Machine) (*Experiment, error) {
	p := &parser{file: path, origin: map[*yaml.Node]string{}, machine: m}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Problems{yamlProblem(path, err)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, Problems{{File: path, Msg: "the file is empty; an experiment needs at least name and workloads"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.addf(root, "an experiment file is a mapping of keys (%s)", strings.Join(topKeys, ", "))
		return nil, p.problems
	}
	for _, s := range sets {
		if err := applySet(root, s, p.origin); err != nil {
			p.problems = append(p.problems, Problem{File: path, Set: s, Msg: err.Error()})
		}
	}
	e := p.experiment(root, m)
	if len(p.problems) > 0 {
		return nil, p.problems
	}
	e.Path = path
	var text bytes.Buffer
	text.Write(data)
	if len(sets) > 0 {
		text.WriteString(setMarker)
		for _, s := range sets {
			fmt.Fprintf(&text, "\n%s%s", setTrailer, s)
		}
	}
	e.Text = text.String()
	return e, nil
}

// Parse appends the overrides to Experiment.Text after setMarker, one per
// line after setTrailer, so that Reload applies them again. The marker
// keeps a file's own comments that happen to begin "# --set" (a file that
// documents an override) from being taken for overrides.
const (
	setMarker  = "\n# ctrbench: --set overrides, as given on the command line:"
	setTrailer = "# --set "
)

// splitText separates a stored Experiment.Text into the file and its
// overrides. Texts stored before the marker existed end in a block of
// setTrailer lines.
func splitText(text string) (file string, sets []string) {
	if i := strings.LastIndex(text, setMarker); i >= 0 {
		for _, l := range strings.Split(text[i+len(setMarker):], "\n") {
			if s, ok := strings.CutPrefix(l, setTrailer); ok {
				sets = append(sets, s)
			}
		}
		return text[:i], sets
	}
	lines := strings.Split(text, "\n")
	end := len(lines)
	for end > 0 && strings.HasPrefix(lines[end-1], setTrailer) {
		end--
	}
	for _, l := range lines[end:] {
		sets = append(sets, strings.TrimPrefix(l, setTrailer))
	}
	return strings.Join(lines[:end], "\n"), sets
}

// Reload parses an experiment again from its stored Text (the file as read,
// then its --set overrides as comments), with the seed it ran with: the
// same cells and order, for resuming a campaign.
func Reload(path, text string, seed int64, m Machine) (*Experiment, error) {
	file, sets := splitText(text)
	e, err := Parse(path, []byte(strings.TrimRight(file, "\n")+"\n"), sets, m)
	if err != nil {
		return nil, err
	}
	e.Seed, e.SeedGiven = seed, true
	return e, nil
}

// yamlParserErrors are the problems yaml.v3's parser (not its scanner)
// reports. For these yaml.v3 prints the 0-based line of the enclosing
// construct (see parser.fail in gopkg.in/yaml.v3/decode.go), one less than
// the line a user counts.
var yamlParserErrors = []string{
	"did not find expected ',' or '}'",
	"did not find expected ',' or ']'",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected node content",
	"did not find expected <document start>",
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
	"found incompatible YAML document",
}

func yamlProblem(path string, err error) Problem {
	// yaml.v3 errors read "yaml: line 7: did not find expected key".
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ":"); ok {
			if line, err := strconv.Atoi(num); err == nil {
				if contains(yamlParserErrors, strings.TrimSpace(tail)) {
					line++
				}
				return Problem{File: path, Line: line, Msg: "not valid YAML:" + tail}
			}
		}
	}
	return Problem{File: path, Msg: "not valid YAML: " + msg}
}

// fields returns a mapping's keys to value nodes, reporting duplicate and
// unknown keys.
func (p *parser) fields(n *yaml.Node, what string, allowed []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.addf(n, "%s must be a mapping with keys %s", what, strings.Join(allowed, ", "))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			p.addf(k, "key %q appears twice in %s", k.Value, what)
			continue
		}
		if allowed != nil && !contains(allowed, k.Value) {
			p.addf(k, "unknown key %q in %s; allowed: %s", k.Value, what, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.addf(n, "%s must be a single value, not a %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

func (p *parser) integer(n *yaml.Node, what string, min int64) (int64, bool) {
	s, ok := p.scalar(n, what)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.addf(n, "%s must be an integer, got %q", what, s)
		return 0, false
	}
	if v < min {
		p.addf(n, "%s must be at least %d, got %d", what, min, v)
		return 0, false
	}
	return v, true
}

func (p *parser) experiment(root *yaml.Node, m Machine) *Experiment {
	f := p.fields(root, "the experiment", topKeys)
	e := &Experiment{Repetitions: DefaultRepetitions, Warmup: DefaultWarmup, Timeout: DefaultTimeout, Retries: DefaultRetries}
	if n, ok := f["name"]; ok {
		if s, ok := p.scalar(n, "name"); ok {
			if strings.TrimSpace(s) == "" {
				p.addf(n, "name must not be empty")
			}
			e.Name = s
		}
	} else {
		p.addf(root, "missing key \"name\": every experiment has a name")
	}
	if n, ok := f["description"]; ok {
		e.Description, _ = p.scalar(n, "description")
	}
	if n, ok := f["seed"]; ok {
		if v, ok := p.integer(n, "seed", 0); ok {
			e.Seed, e.SeedGiven = v, true
		}
	} else {
		e.Seed = rand.Int64N(1 << 31)
	}
	if n, ok := f["repetitions"]; ok {
		if n.Kind == yaml.MappingNode {
			e.Adaptive = p.adaptive(n)
			if e.Adaptive != nil {
				e.Repetitions = e.Adaptive.Min
			}
		} else if v, ok := p.integer(n, "repetitions", 1); ok {
			e.Repetitions = int(v)
		}
	}
	if n, ok := f["budget"]; ok {
		if s, ok := p.scalar(n, "budget"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				p.addf(n, "budget must be a positive duration such as 20m or 1h, got %q", s)
			} else {
				e.Budget = d
			}
		}
	}
	if n, ok := f["warmup"]; ok {
		if v, ok := p.integer(n, "warmup", 0); ok {
			e.Warmup = int(v)
		}
	}
	if n, ok := f["retries"]; ok {
		if v, ok := p.integer(n, "retries", 0); ok {
			if v > MaxRetries {
				p.addf(n, "retries must be at most %d (tries of a trial the platform failed), got %d", MaxRetries, v)
			} else {
				e.Retries = int(v)
			}
		}
	}
	if n, ok := f["timeout"]; ok {
		if s, ok := p.scalar(n, "timeout"); ok {
			d, err := time.ParseDuration(s)
			switch {
			case err != nil:
				p.addf(n, "timeout must be a duration such as 30s or 5m, got %q", s)
			case d <= 0:
				p.addf(n, "timeout must be positive, got %s", s)
			default:
				e.Timeout = d
			}
		}
	}
	if n, ok := f["symmetric"]; ok {
		if v, ok := p.scalar(n, "symmetric"); ok {
			switch v {
			case "true", "false":
				e.Symmetric = v == "true"
			default:
				p.addf(n, "symmetric must be true or false, got %q", v)
			}
		}
	}
	if n, ok := f["machine"]; ok {
		e.Envelope = p.envelope(n, m)
	}
	if n, ok := f["workloads"]; ok {
		e.Workloads = p.workloads(n)
		p.wls = e.Workloads
	} else {
		p.addf(root, "missing key \"workloads\": list at least one workload (types: %s)", strings.Join(workload.Types(), ", "))
	}
	if a := e.Adaptive; a != nil && a.Metric != "" {
		for _, w := range e.Workloads {
			if w.Spec == nil {
				continue
			}
			if _, ok := w.Spec.Metric(a.Metric); !ok {
				var names []string
				for _, m := range w.Spec.Metrics {
					names = append(names, m.Name)
				}
				p.addf(f["repetitions"], "repetitions.metric %q decides when each cell has enough trials, but workload %s (%s) has no such metric; its metrics: %s",
					a.Metric, w.Name, w.Type, strings.Join(names, ", "))
			}
		}
	}
	factorNodes := map[string]*yaml.Node{}
	if n, ok := f["factors"]; ok {
		e.Factors, factorNodes = p.factors(n, e.Workloads, m)
		p.checkBundles(e.Factors, factorNodes)
	}
	// With neighbours, the target alone (S0's Case 1) is always run: added
	// when missing, before exclusions and the baseline may name it.
	if af := findFactor(e.Factors, vocab.FAntagonist); af != nil && !contains(af.Levels, vocab.AntagonistNone) {
		af.Levels = append([]string{vocab.AntagonistNone}, af.Levels...)
	}
	if n, ok := f["exclude"]; ok {
		e.Exclude = p.excludes(n, e.Factors)
	}
	if n, ok := f["baseline"]; ok {
		e.Baseline = p.levelMap(n, "baseline", e.Factors)
	}
	// ... and it is what every interference ratio compares with.
	if findFactor(e.Factors, vocab.FAntagonist) != nil {
		if e.Baseline == nil {
			e.Baseline = map[string]string{}
		}
		if _, ok := e.Baseline[vocab.FAntagonist]; !ok {
			e.Baseline[vocab.FAntagonist] = vocab.AntagonistNone
		}
	}
	if n, ok := f["symmetric"]; ok && e.Symmetric && findFactor(e.Factors, vocab.FAntagonist) == nil {
		p.addf(n, "symmetric measures both sides of a pairing, but there is no antagonist factor naming neighbours")
	}
	if combos := factorial(e.Factors) * len(e.Workloads); combos > MaxCombinations {
		node := f["factors"]
		if node == nil {
			node = root
		}
		p.addf(node, "the factors make more than %d combinations (their levels multiplied, times the workloads): split the experiment into several files", MaxCombinations)
	}
	if len(p.problems) == 0 {
		p.checkCells(e, root, factorNodes, f["baseline"])
	}
	return e
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

// envelope reads "machine: {cpus, cpuset, memory}", the emulated machine.
func (p *parser) envelope(n *yaml.Node, m Machine) Envelope {
	var v Envelope
	for key, vn := range p.fields(n, "machine", []string{vocab.FCPUs, vocab.FCpuset, vocab.FMemory}) {
		s, ok := p.scalar(vn, "machine."+key)
		if !ok {
			continue
		}
		level, err := checkLevel(key, s, p.wls, m)
		if err != nil {
			p.addf(vn, "machine: %v", err)
			continue
		}
		switch key {
		case vocab.FCPUs:
			v.CPUs, _ = strconv.ParseFloat(level, 64)
		case vocab.FCpuset:
			v.Cpuset = level
		case vocab.FMemory:
			v.MemoryBytes, _ = workload.ParseSize(level)
		}
		if level == vocab.NoLimit {
			p.addf(vn, "machine.%s: give a size (leave the key out for no limit)", key)
		}
	}
	return v
}

func (p *parser) workloads(n *yaml.Node) []Workload {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.addf(n, "workloads must be a non-empty list of {name, type, params}")
		return nil
	}
	var out []Workload
	seen := map[string]*yaml.Node{}
	for _, item := range n.Content {
		f := p.fields(item, "a workload", workloadKeys)
		var w Workload
		tn, ok := f["type"]
		if !ok {
			p.addf(item, "workload has no type; types: %s", strings.Join(workload.Types(), ", "))
			continue
		}
		typ, ok := p.scalar(tn, "type")
		if !ok {
			continue
		}
		spec, ok := workload.Lookup(typ)
		if !ok {
			p.addf(tn, "unknown workload type %q; types: %s", typ, strings.Join(workload.Types(), ", "))
			continue
		}
		w.Type, w.Spec, w.Name = typ, spec, typ
		if nn, ok := f["name"]; ok {
			if s, ok := p.scalar(nn, "workload name"); ok {
				w.Name = s
			}
		}
		if prev, dup := seen[w.Name]; dup {
			p.addf(item, "workload name %q is used twice (first at line %d); give each a distinct name", w.Name, prev.Line)
			continue
		}
		seen[w.Name] = item
		user := map[string]string{}
		userNodes := map[string]*yaml.Node{}
		if pn, ok := f["params"]; ok {
			for name, v := range p.fields(pn, "params of "+w.Name, nil) {
				if s, ok := p.scalar(v, "parameter "+name); ok {
					user[name], userNodes[name] = s, v
				}
			}
			// Key nodes point at the parameter name for unknown-name errors.
			for i := 0; pn.Kind == yaml.MappingNode && i+1 < len(pn.Content); i += 2 {
				if _, ok := spec.Param(pn.Content[i].Value); !ok {
					userNodes[pn.Content[i].Value] = pn.Content[i]
				}
			}
		}
		vals, errs := spec.Resolve(user)
		for _, name := range sortedKeys(errs) {
			node := userNodes[name]
			if node == nil {
				node = item
			}
			msg := errs[name].Error()
			if _, known := spec.Param(name); known {
				msg = fmt.Sprintf("parameter %s of %s: %s", name, w.Name, msg)
			}
			p.addf(node, "%s", msg)
		}
		w.Params = vals
		out = append(out, w)
	}
	return out
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
		if v.Kind == yaml.MappingNode {
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
			s, ok := p.scalar(item, "a level of "+k.Value)
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
			if fk.Value == vocab.FAntagonist || fk.Value == vocab.FPackaging {
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

func (p *parser) hasWorkload(name string) bool {
	for _, w := range p.wls {
		if w.Name == name {
			return true
		}
	}
	return false
}

func (p *parser) workloadNames() string {
	n := make([]string, len(p.wls))
	for i, w := range p.wls {
		n[i] = w.Name
	}
	return strings.Join(n, ", ")
}

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

// adaptive reads repetitions as a mapping: {min: 3, max: 30, rci: 2%}.
func (p *parser) adaptive(n *yaml.Node) *Adaptive {
	f := p.fields(n, "repetitions", adaptiveKeys)
	a := &Adaptive{Min: DefaultRepetitions}
	ok := true
	if v, found := f["min"]; found {
		m, good := p.integer(v, "repetitions.min", 2)
		a.Min, ok = int(m), ok && good
	}
	if v, found := f["max"]; found {
		m, good := p.integer(v, "repetitions.max", 2)
		a.Max, ok = int(m), ok && good
	} else {
		p.addf(n, "repetitions as a mapping needs max: the most recorded trials a cell may get (keys: %s)", strings.Join(adaptiveKeys, ", "))
		ok = false
	}
	if v, found := f["rci"]; found {
		if s, good := p.scalar(v, "repetitions.rci"); good {
			pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
			if err != nil || !strings.HasSuffix(strings.TrimSpace(s), "%") || pct <= 0 || pct >= 100 {
				p.addf(v, "repetitions.rci is the target 95%% interval half-width relative to the mean, a percentage such as 2%% (above 0, below 100), got %q", s)
				ok = false
			} else {
				a.RCI = pct / 100
			}
		} else {
			ok = false
		}
	} else {
		p.addf(n, "repetitions as a mapping needs rci: the interval half-width, relative to the mean, to stop at (e.g. 2%%)")
		ok = false
	}
	if v, found := f["metric"]; found {
		a.Metric, _ = p.scalar(v, "repetitions.metric")
	}
	if ok && a.Max < a.Min {
		p.addf(n, "repetitions.max (%d) is below repetitions.min (%d)", a.Max, a.Min)
		ok = false
	}
	if !ok {
		return nil
	}
	return a
}

// AdaptiveOf reads the adaptive repetition of a stored experiment text (a
// campaign's SpecText, with its --set trailer) without validating the rest:
// reports use it to say whether each cell reached its target. nil when the
// repetitions are fixed or cannot be read.
func AdaptiveOf(text string) *Adaptive {
	var doc yaml.Node
	file, sets := splitText(text)
	if yaml.Unmarshal([]byte(file), &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	origin := map[*yaml.Node]string{}
	for _, s := range sets {
		_ = applySet(root, s, origin)
	}
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "repetitions" && root.Content[i+1].Kind == yaml.MappingNode {
			p := &parser{origin: origin}
			if a := p.adaptive(root.Content[i+1]); a != nil && len(p.problems) == 0 {
				return a
			}
		}
	}
	return nil
}
