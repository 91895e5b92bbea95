package spec

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// applySet applies one "path=value" override to the YAML tree. The path walks
// mapping keys (a key may itself contain dots, as in factors.server.platform)
// and list items by index or by their name/type (workloads.tcp.params.duration).
// The value is YAML, so lists work: factors.platform=[docker].
func applySet(root *yaml.Node, expr string, origin map[*yaml.Node]string) error {
	return applyOverride(root, expr, func(n *yaml.Node) { origin[n] = expr })
}

// applyOverride is applySet, with mark called on every node the override
// puts in the tree (to say where a problem found in it came from).
func applyOverride(root *yaml.Node, expr string, mark func(*yaml.Node)) error {
	path, value, err := parseOverride(expr)
	if err != nil {
		return err
	}
	markAll(value, mark)
	o := override{root: root, value: value, mark: mark}
	segs := strings.Split(path, ".")
	cur := root
	for len(segs) > 0 {
		done := false
		switch cur.Kind {
		case yaml.MappingNode:
			cur, segs, done = o.intoMapping(cur, segs)
		case yaml.SequenceNode:
			if cur, segs, done, err = o.intoSequence(cur, segs); err != nil {
				return err
			}
		default:
			return fmt.Errorf("cannot descend into %q: it is a single value", segs[0])
		}
		if done {
			return nil
		}
	}
	return nil
}

// parseOverride splits "path=value" into the path and the value's YAML
// node (an empty string when the value is empty).
func parseOverride(expr string) (string, *yaml.Node, error) {
	path, value, ok := strings.Cut(expr, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return "", nil, fmt.Errorf("want path=value, e.g. repetitions=10 or workloads.cpu.params.max_prime=40000")
	}
	if first, _, _ := strings.Cut(path, "."); first == profilesKey {
		return "", nil, fmt.Errorf("profiles are chosen (--profile NAME), not overridden")
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		return "", nil, fmt.Errorf("value %q is not valid YAML: %v", value, err)
	}
	node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	if v.Kind == yaml.DocumentNode && len(v.Content) > 0 {
		node = v.Content[0]
	}
	return path, node, nil
}

// override is one override on its way down the tree: value goes where
// the path ends, and mark is called on every node it creates.
type override struct {
	root, value *yaml.Node
	mark        func(*yaml.Node)
}

// intoMapping takes the path's next step in mapping cur: into the value
// of the longest key that matches a prefix of segs, or, for a missing
// key, into a new one. done: the value is in place.
func (o override) intoMapping(cur *yaml.Node, segs []string) (next *yaml.Node, rest []string, done bool) {
	for n := len(segs); n >= 1; n-- {
		key := strings.Join(segs[:n], ".")
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value != key {
				continue
			}
			if n == len(segs) {
				cur.Content[i+1] = o.value
				return nil, nil, true
			}
			return cur.Content[i+1], segs[n:], false
		}
	}
	// A missing key: create the rest of the path as nested mappings,
	// except that the last segments may form a dotted factor name.
	key := strings.Join(segs, ".")
	if len(segs) > 1 && !isDottedKeyParent(cur, o.root) {
		key = segs[0]
		child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, child)
		o.mark(cur.Content[len(cur.Content)-2])
		o.mark(child)
		return child, segs[1:], false
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	o.mark(k)
	cur.Content = append(cur.Content, k, o.value)
	return nil, nil, true
}

// intoSequence takes the path's next step in list cur: into the item
// segs names by index or by its name/type. done: the value is in place.
func (o override) intoSequence(cur *yaml.Node, segs []string) (next *yaml.Node, rest []string, done bool, err error) {
	idx, n := -1, 1
	if i, err := strconv.Atoi(segs[0]); err == nil && i >= 0 && i < len(cur.Content) {
		idx = i
	} else {
		idx, n = namedItem(cur, segs)
	}
	if idx < 0 {
		return nil, nil, false, fmt.Errorf("no list item %q (use an index or the item's name)", segs[0])
	}
	if n == len(segs) {
		cur.Content[idx] = o.value
		return nil, nil, true, nil
	}
	return cur.Content[idx], segs[n:], false, nil
}

// namedItem is the index of the item of list cur named by the longest
// prefix of segs, and that prefix's length: names and types may contain
// dots (workloads.cpu.primes.params.threads). -1 when none is.
func namedItem(cur *yaml.Node, segs []string) (idx, n int) {
	for k := len(segs); k >= 1; k-- {
		for i, item := range cur.Content {
			if itemName(item) == strings.Join(segs[:k], ".") {
				return i, k
			}
		}
	}
	return -1, 1
}

// isDottedKeyParent reports whether cur is a mapping keyed by factor names,
// which may contain dots (server.platform, param.size): factors, baseline,
// or an item of exclude.
func isDottedKeyParent(cur, root *yaml.Node) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, root.Content[i+1]
		switch {
		case (k == "factors" || k == "baseline") && v == cur:
			return true
		case k == "exclude" && v.Kind == yaml.SequenceNode:
			for _, item := range v.Content {
				if item == cur {
					return true
				}
			}
		}
	}
	return false
}

// itemName is a list item's name, or its type when it has no name.
func itemName(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	var typ string
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "name":
			return n.Content[i+1].Value
		case "type":
			typ = n.Content[i+1].Value
		}
	}
	return typ
}

// markAll calls mark on n and every node under it.
func markAll(n *yaml.Node, mark func(*yaml.Node)) {
	mark(n)
	for _, c := range n.Content {
		markAll(c, mark)
	}
}
