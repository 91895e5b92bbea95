package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/userimage"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var workloadKeys = []string{"name", "type", "params"}

// workloads reads the workloads list: each item's type, name and
// parameters, checked against its type.
func (p *parser) workloads(n *yaml.Node) []Workload {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.addf(n, "workloads must be a non-empty list of {name, type, params}")
		return nil
	}
	var out []Workload
	seen := map[string]*yaml.Node{}
	for _, item := range n.Content {
		f := p.fields(item, "a workload", workloadKeys)
		w, ok := p.workloadOf(item, f)
		if !ok {
			continue
		}
		if prev, dup := seen[w.Name]; dup {
			p.addf(item, "workload name %q is used twice (first at line %d); give each a distinct name", w.Name, prev.Line)
			continue
		}
		seen[w.Name] = item
		p.workloadParams(&w, item, f["params"])
		out = append(out, w)
	}
	return out
}

// workloadOf reads a workload's type and name (its type when it has
// none); false when the type is missing or unknown.
func (p *parser) workloadOf(item *yaml.Node, f map[string]*yaml.Node) (Workload, bool) {
	var w Workload
	tn, ok := f["type"]
	if !ok {
		p.addf(item, "workload has no type; types: %s", strings.Join(workload.Types(), ", "))
		return w, false
	}
	typ, ok := p.scalar(tn, "type")
	if !ok {
		return w, false
	}
	spec, ok := workload.Lookup(typ)
	if !ok {
		p.addf(tn, "unknown workload type %q; types: %s", typ, strings.Join(workload.Types(), ", "))
		return w, false
	}
	w.Type, w.Spec, w.Name = typ, spec, typ
	if nn, ok := f["name"]; ok {
		if s, ok := p.scalar(nn, "workload name"); ok {
			w.Name = s
		}
	}
	return w, true
}

// workloadParams reads workload w's parameters from pn (nil when the
// item has none) and resolves them against its type, reporting each
// problem at the parameter (else at the item).
func (p *parser) workloadParams(w *Workload, item, pn *yaml.Node) {
	user, userNodes, unread := p.userParams(w, pn)
	p.filePaths(w.Spec, user, userNodes, w.Name)
	vals, errs := w.Spec.Resolve(user)
	if unread {
		errs = nil // what Resolve says of a parameter it lacks adds nothing
	}
	for _, name := range sortedKeys(errs) {
		node := userNodes[name]
		if node == nil {
			node = item
		}
		p.paramProblems(node, errs[name], func(msg string) string {
			if _, known := w.Spec.Param(name); known {
				return fmt.Sprintf("parameter %s of %s: %s", name, w.Name, msg)
			}
			return msg
		})
	}
	if len(errs) == 0 && !unread {
		p.checkArchive(w.Spec, vals, userNodes, w.Name)
	}
	w.Params = vals
	w.nodes = userNodes
}

// userParams are the parameters the file gives workload w, as text, and
// the node of each; unread is true when one is in the wrong shape.
func (p *parser) userParams(w *Workload, pn *yaml.Node) (user map[string]string, nodes map[string]*yaml.Node, unread bool) {
	user, nodes = map[string]string{}, map[string]*yaml.Node{}
	if pn == nil {
		return user, nodes, false
	}
	for name, v := range p.fields(pn, "params of "+w.Name, nil) {
		if par, ok := w.Spec.Param(name); ok && par.Kind.Structured() {
			s, ok := p.structured(v, par, w.Name)
			if ok {
				user[name], nodes[name] = s, v
			}
			unread = unread || !ok
		} else if s, ok := p.scalar(v, "parameter "+name); ok {
			user[name], nodes[name] = s, v
		}
	}
	// Key nodes point at the parameter name for unknown-name errors.
	for i := 0; pn.Kind == yaml.MappingNode && i+1 < len(pn.Content); i += 2 {
		if _, ok := w.Spec.Param(pn.Content[i].Value); !ok {
			nodes[pn.Content[i].Value] = pn.Content[i]
		}
	}
	return user, nodes, unread
}

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

// structured reads a list or mapping parameter as the JSON its kind takes
// (workload.List, Mapping, Object): a mapping's keys in the file's order.
func (p *parser) structured(n *yaml.Node, par workload.Param, wname string) (string, bool) {
	want := yaml.MappingNode
	if par.Kind == workload.List {
		want = yaml.SequenceNode
	}
	if n.Kind != want {
		p.addf(n, "parameter %s of %s: want %s", par.Name, wname, par.Describe())
		return "", false
	}
	// An image archive named inside (a service's client's) is a path
	// relative to the experiment file, as a workload's own is.
	p.archivePaths(n)
	var b strings.Builder
	if err := writeJSON(&b, n, par.Kind != workload.Object); err != nil {
		p.addf(n, "parameter %s of %s: %v; want %s", par.Name, wname, err, par.Describe())
		return "", false
	}
	return b.String(), true
}

// maxStructured bounds what one list or mapping parameter may expand to:
// YAML aliases repeat what their anchor holds, so a few lines can name
// more than any machine holds ("billion laughs").
const maxStructured = 1 << 20

// writeJSON writes a YAML node as JSON, mappings' keys in order; with
// flat, only scalars may be items or values (a list or mapping of strings).
func writeJSON(b *strings.Builder, n *yaml.Node, flat bool) error {
	if b.Len() > maxStructured {
		return fmt.Errorf("it expands to more than %d MiB (each alias repeats all its anchor holds)", maxStructured>>20)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		v, _ := json.Marshal(n.Value)
		b.Write(v)
	case yaml.SequenceNode, yaml.MappingNode:
		open, end, step := "[", "]", 1
		if n.Kind == yaml.MappingNode {
			open, end, step = "{", "}", 2
		}
		b.WriteString(open)
		for i := 0; i < len(n.Content); i += step {
			if i > 0 {
				b.WriteString(",")
			}
			if step == 2 {
				k, _ := json.Marshal(n.Content[i].Value)
				b.Write(k)
				b.WriteString(":")
			}
			item := n.Content[i+step-1]
			if flat && item.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d holds a nested list or mapping", item.Line)
			}
			if err := writeJSON(b, item, flat); err != nil {
				return err
			}
		}
		b.WriteString(end)
	case yaml.AliasNode:
		return writeJSON(b, n.Alias, flat)
	default:
		return fmt.Errorf("line %d: not a value", n.Line)
	}
	return nil
}

// checkPlaceholders refuses a placeholder no trial binds: {trial} and
// {cell.<factor>} of the file's factors are bound (workload.Bind).
func (p *parser) checkPlaceholders(e *Experiment) {
	var factors []string
	for _, f := range e.Factors {
		factors = append(factors, f.Name)
	}
	for _, w := range e.Workloads {
		if w.Spec == nil || len(w.Spec.User.TakesPlaceholders) == 0 {
			continue
		}
		if bad := w.Spec.UnknownPlaceholders(w.Params, factors); len(bad) > 0 {
			node := w.nodes[w.Spec.User.TakesPlaceholders[0]]
			for _, name := range w.Spec.User.TakesPlaceholders {
				if n := w.nodes[name]; n != nil && len(w.Spec.UnknownPlaceholders(workload.Values{name: w.Params[name]}, factors)) > 0 {
					node = n
					break
				}
			}
			p.addf(node, "workload %s: unknown placeholder %s; allowed: {trial} (the trial's number), {cell.<factor>} for a factor of this file (%s), {{ for a literal {",
				w.Name, strings.Join(bad, ", "), strings.Join(factors, ", "))
		}
	}
}

// paramProblems reports a parameter's error at its node; each of several
// joined errors on its own, one about a place inside a structured
// parameter (workload.Located) at that place's line.
func (p *parser) paramProblems(node *yaml.Node, err error, say func(string) string) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		at := node
		if l, ok := e.(workload.Located); ok {
			at = lookup(node, l.At())
		}
		p.addf(at, "%s", say(e.Error()))
	}
}

// lookup follows keys through mappings from n, as far as they go: the
// node of the last key found (its key node, where a user looks).
func lookup(n *yaml.Node, keys []string) *yaml.Node {
	at := n
	for _, k := range keys {
		found := false
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				at, n, found = n.Content[i], n.Content[i+1], true
				break
			}
		}
		if !found {
			break
		}
	}
	return at
}

// filePaths makes the file parameters (an image archive) absolute from the
// experiment file's directory and refuses one that cannot be read.
func (p *parser) filePaths(spec *workload.Spec, user map[string]string, nodes map[string]*yaml.Node, wname string) {
	for _, par := range spec.Params {
		v, ok := user[par.Name]
		if !par.File || !ok || v == "" {
			continue
		}
		v = p.absolute(v)
		if _, err := os.Stat(v); err != nil {
			p.addf(nodes[par.Name], "parameter %s of %s: %v (a path is relative to the experiment file's directory)", par.Name, wname, err)
			delete(user, par.Name)
			continue
		}
		user[par.Name] = v
	}
}

// absolute resolves a path the file names: relative to the experiment
// file's directory, then absolute, so what a run shows and uses is the
// one file wherever it runs from.
func (p *parser) absolute(path string) string {
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(p.file), path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// archivePaths makes every image_archive inside n absolute, a relative
// one from the experiment file's directory.
func (p *parser) archivePaths(n *yaml.Node) {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == workload.ParamImageArchive && v.Kind == yaml.ScalarNode && v.Value != "" && !filepath.IsAbs(v.Value) {
			v.Value = p.absolute(v.Value)
		}
		p.archivePaths(v)
	}
}

// checkArchive opens the image archive each role of a workload runs from,
// as ctrbench will when it runs, and checks that the image holds the
// program the role runs: a missing one is refused now, not in a trial.
func (p *parser) checkArchive(spec *workload.Spec, v workload.Values, nodes map[string]*yaml.Node, wname string) {
	for _, role := range spec.RoleList() {
		run := spec.RoleOf(v, role)
		name, path := run.Image, run.Archive
		if name != "" {
			p.checkImage(name, nodes, role, run, wname)
		}
		if path == "" {
			continue
		}
		node := paramNode(nodes, workload.ParamImageArchive, run)
		im, err := userimage.Open(path)
		if err != nil {
			p.addf(node, "workload %s (%s): %v", wname, role, err)
			continue
		}
		cmd, named := commandOf(run)
		if !named { // the image's own command runs
			if argv, err := im.Config().Command(nil); err != nil {
				p.addf(node, "workload %s: the image %s has neither ENTRYPOINT nor CMD; give the %s's command", wname, path, role)
			} else {
				cmd = argv[0]
			}
		}
		if cmd != "" {
			if _, err := im.LookPath(cmd, ""); err != nil {
				p.addf(paramNode(nodes, "command", run), "workload %s: the image %s has no program %s to run the %s: %v", wname, path, cmd, role, err)
			}
		}
		im.Close()
	}
}

// checkImage looks a role's image: up in the engine it is taken from
// (Machine.Image): one that is not there is refused now, at its line; an
// engine that cannot be asked defers the check to the platform's
// preparation, and a note says so.
func (p *parser) checkImage(name string, nodes map[string]*yaml.Node, role string, run workload.RoleRun, wname string) {
	if p.machine.Image == nil || p.imagesChecked[name] {
		return
	}
	if p.imagesChecked == nil {
		p.imagesChecked = map[string]bool{}
	}
	p.imagesChecked[name] = true
	node := paramNode(nodes, workload.ParamImage, run)
	err := p.machine.Image(name)
	switch {
	case err == nil:
	case errors.Is(err, ErrImageUnchecked):
		p.notes = append(p.notes, fmt.Sprintf("%s:%d: workload %s (%s): image %s not looked up now: %v; it is when the platform is prepared", p.file, node.Line, wname, role, name, err))
	default:
		p.addf(node, "workload %s (%s): %v", wname, role, err)
	}
}

// commandOf is the program a role runs by its parameters (a service's
// client: its own command); "" when a placeholder names it. named is
// false when the parameters name no command (the image's own runs).
func commandOf(run workload.RoleRun) (program string, named bool) {
	cmd := run.Command
	if len(cmd) == 0 {
		return "", false
	}
	if strings.Contains(cmd[0], "{") {
		return "", true
	}
	return cmd[0], true
}

// paramNode is where an error about a role's parameter name points: the
// parameter that holds the role's own settings when it has one (a
// service's client), else the parameter itself.
func paramNode(nodes map[string]*yaml.Node, name string, run workload.RoleRun) *yaml.Node {
	if n := nodes[run.Param]; run.Param != "" && n != nil {
		return n
	}
	return nodes[name]
}
