package outputs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// segment is one step of a json path: a key, which digits also are, and
// an array index when the segment is digits.
type segment struct {
	key   string
	index int // -1 when the segment is not digits
}

// parsePath reads a path: keys and indexes separated by dots, or in
// brackets (an index, or a key as a JSON string).
func parsePath(p string) ([]segment, error) {
	var segs []segment
	i := 0
	for first := true; first || i < len(p); first = false {
		var seg segment
		var err error
		switch {
		case i < len(p) && p[i] == '[':
			seg, i, err = bracket(p, i)
		case first || p[i] == '.':
			if !first {
				i++
			}
			seg, i, err = plain(p, i)
		default:
			err = fmt.Errorf("has %q after a bracket, where a dot or another bracket goes", p[i])
		}
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

// plain reads the key starting at p[i], up to the next dot or bracket,
// and returns the index after it.
func plain(p string, i int) (segment, int, error) {
	end := strings.IndexAny(p[i:], ".[]")
	if end < 0 {
		end = len(p) - i
	}
	end += i
	switch {
	case end < len(p) && p[end] == ']':
		return segment{}, 0, errors.New("has a ] that no [ opens")
	case end == i:
		return segment{}, 0, errors.New("has an empty segment (a dot at an end, two dots, or a dot before a bracket)")
	}
	return newSegment(p[i:end]), end, nil
}

// bracket reads the bracketed index or quoted key starting at p[i] (a
// [), and returns the index after its ].
func bracket(p string, i int) (segment, int, error) {
	if i+1 < len(p) && p[i+1] == '"' {
		end := i + 2
		for ; end < len(p) && p[end] != '"'; end++ {
			if p[end] == '\\' {
				end++
			}
		}
		var key string
		if end >= len(p) || json.Unmarshal([]byte(p[i+1:end+1]), &key) != nil {
			return segment{}, 0, errors.New("has a quoted key that is not a JSON string")
		}
		if end+1 >= len(p) || p[end+1] != ']' {
			return segment{}, 0, errors.New("has a quoted key with no ] after it")
		}
		return segment{key: key, index: -1}, end + 2, nil
	}
	end := strings.IndexByte(p[i:], ']')
	if end < 0 {
		return segment{}, 0, errors.New("has a [ that no ] closes")
	}
	inside := p[i+1 : i+end]
	if _, err := strconv.Atoi(inside); err != nil || !digitsOnly(inside) || inside == "" {
		return segment{}, 0, fmt.Errorf("has [%s], a bad index: brackets hold an index (digits) or a key in double quotes", inside)
	}
	return newSegment(inside), i + end + 1, nil
}

// newSegment is the segment of key k: also an index when k is digits.
func newSegment(k string) segment {
	if n, err := strconv.Atoi(k); err == nil && digitsOnly(k) {
		return segment{key: k, index: n}
	}
	return segment{key: k, index: -1}
}

// pathString writes path as a path.
func pathString(path []segment) string {
	var b strings.Builder
	for _, s := range path {
		switch {
		case strings.ContainsAny(s.key, ".[]") || s.key == "":
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		case b.Len() > 0:
			b.WriteString("." + s.key)
		default:
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// walk follows path from v, and returns the value it leads to, or how
// many of its segments it could follow when it leads nowhere.
func walk(v any, path []segment) (any, int) {
	for k, s := range path {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[s.key]
			if !ok {
				return nil, k
			}
			v = next
		case []any:
			if s.index < 0 || s.index >= len(x) {
				return nil, k
			}
			v = x[s.index]
		default:
			return nil, k
		}
	}
	return v, len(path)
}

// whyNot says why path leads nowhere from v.
func whyNot(v any, path []segment) string {
	_, k := walk(v, path)
	v, _ = walk(v, path[:k])
	where := "the output's object"
	if k > 0 {
		where = pathString(path[:k])
	}
	switch x := v.(type) {
	case map[string]any:
		return fmt.Sprintf("%s has no key %q (%s)", where, path[k].key, keysOf(x))
	case []any:
		return fmt.Sprintf("%s is an array of %d elements, which %q does not index (indexes count from 0)", where, len(x), path[k].key)
	}
	return fmt.Sprintf("%s is %s, not an object or an array", where, kindOf(v))
}

// keysOf lists an object's keys for a message, at most ten.
func keysOf(m map[string]any) string {
	if len(m) == 0 {
		return "it is empty"
	}
	keys := slices.Sorted(maps.Keys(m))
	more := ""
	if len(keys) > 10 {
		keys, more = keys[:10], fmt.Sprintf(" and %d more", len(keys)-10)
	}
	return "its keys: " + strings.Join(keys, ", ") + more
}

// kindOf names a decoded JSON value's kind.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}

// jsonNumber reads a decoded JSON value as a number: a JSON number, or a
// string holding one.
func jsonNumber(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return number(string(x))
	case string:
		return number(x)
	}
	return 0, fmt.Errorf("is %s, not a number", kindOf(v))
}

// decodeObject decodes data, one JSON object and nothing after it but
// white space.
func decodeObject(data []byte) (map[string]any, error) {
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(any)) // the first error, where it is
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("is not JSON: line %d: %v", 1+bytes.Count(data[:syn.Offset], []byte("\n")), err)
		}
		return nil, fmt.Errorf("is not JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("is not JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("is %s, not a JSON object", kindOf(v))
	}
	return obj, nil
}

// readJSON reads out as one JSON object.
func readJSON(out []byte, sels []selector) *reading {
	r := newReading(sels)
	if len(bytes.TrimSpace(out)) == 0 {
		r.fatal = errors.New("the output is empty; json reads one JSON object")
		return r
	}
	obj, err := decodeObject(out)
	if err != nil {
		r.fatal = fmt.Errorf("the output %w; json reads one JSON object (one per line is jsonl)", err)
		return r
	}
	for i, s := range sels {
		v, k := walk(obj, s.path)
		if k < len(s.path) {
			r.why[i] = fmt.Sprintf("path %s: %s", s.Path, whyNot(obj, s.path))
			continue
		}
		f, err := jsonNumber(v)
		if err != nil {
			r.fail(i, 0, fmt.Errorf("path %s %w", s.Path, err))
			continue
		}
		r.add(i, f, 0)
	}
	return r
}

// readJSONL reads out as one JSON object per line.
func readJSONL(out []byte, sels []selector) *reading {
	r := newReading(sels)
	objects := 0
	type miss struct {
		line int
		obj  map[string]any
	}
	misses := make([]miss, len(sels)) // per metric: the last line without it
	for line, rest, n := []byte(nil), out, 1; len(rest) > 0; n++ {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		obj, err := decodeObject(line)
		if err != nil {
			r.fatal = fmt.Errorf("line %d %w; jsonl reads one JSON object per line (or an empty line)", n, err)
			return r
		}
		objects++
		for i, s := range sels {
			v, k := walk(obj, s.path)
			if k < len(s.path) {
				misses[i] = miss{n, obj}
				continue
			}
			f, err := jsonNumber(v)
			if err != nil {
				r.fail(i, n, fmt.Errorf("path %s %w", s.Path, err))
				continue
			}
			r.add(i, f, n)
		}
	}
	if objects == 0 {
		r.fatal = errors.New("the output has no lines; jsonl reads one JSON object per line")
	}
	for i, m := range misses {
		if m.obj != nil {
			r.why[i] = fmt.Sprintf("none of its %d lines has path %s (line %d: %s)", objects, sels[i].Path, m.line, whyNot(m.obj, sels[i].path))
		}
	}
	return r
}
