package spec

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/workload"
)

var workloadKeys = []string{"name", "type", "params"}

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
