package workload

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Kind is the type of a workload parameter. Values are parsed from the
// experiment file (YAML scalars) and normalised so the agent can parse them
// again from a string map.
type Kind string

const (
	Int      Kind = "int"
	Float    Kind = "float"
	Duration Kind = "duration" // "5s", "250ms"
	Size     Kind = "size"     // "128KiB", "1MB", "4096" (bytes)
	String   Kind = "string"
	Bool     Kind = "bool"
	Enum     Kind = "enum" // one of Param.Allowed
)

// Param describes one parameter of a workload.
type Param struct {
	Name    string
	Kind    Kind
	Default string // in the same syntax a user writes
	Doc     string
	Min     float64 // inclusive lower bound for numeric kinds (Duration in seconds, Size in bytes); NaN = none
	Max     float64 // inclusive upper bound; NaN = none
	Allowed []string
	// Pattern, for String parameters, is a regular expression the whole
	// value must match; PatternDoc says in words what it accepts.
	Pattern    string
	PatternDoc string
	// File: the value is a path, which the parser makes absolute from the
	// experiment file's directory and checks is readable.
	File bool
	// Check, for an Object parameter, validates its JSON and returns its
	// canonical text; CheckDoc says in words what it accepts.
	Check    func(string) (string, error)
	CheckDoc string
	// Auto: the parameter also takes the word Auto, which the workload
	// resolves as it runs (from what the instance may use) and records.
	Auto bool
}

// Auto is the word a parameter marked OrAuto takes besides its kind's
// values.
const Auto = "auto"

// Matching returns p restricted to values matching the regular expression
// re (anchored), described to users as doc.
func (p Param) Matching(re, doc string) Param { p.Pattern, p.PatternDoc = re, doc; return p }

// P is a convenience constructor with no bounds.
func P(name string, kind Kind, def, doc string) Param {
	return Param{Name: name, Kind: kind, Default: def, Doc: doc, Min: math.NaN(), Max: math.NaN()}
}

// Range returns p with inclusive numeric bounds.
func (p Param) Range(min, max float64) Param { p.Min, p.Max = min, max; return p }

// OrAuto returns p taking the word auto as well, which its workload
// resolves as it runs.
func (p Param) OrAuto() Param { p.Auto = true; return p }

// OneOf returns p as an enum of the given values.
func (p Param) OneOf(v ...string) Param { p.Kind = Enum; p.Allowed = v; return p }

// Describe says what values p accepts, for error messages and docs.
func (p Param) Describe() string {
	if p.Auto {
		q := p
		q.Auto = false
		return q.Describe() + ", or " + Auto
	}
	var s string
	switch p.Kind {
	case Int:
		s = "an integer"
	case Float:
		s = "a number"
	case Duration:
		s = "a duration such as 500ms, 5s, 2m"
	case Size:
		s = "a size in bytes such as 4096, 64KiB, 1MiB, 1MB"
	case String:
		if p.PatternDoc != "" {
			return p.PatternDoc
		}
		s = "a string"
	case Bool:
		s = "true or false"
	case Enum:
		return "one of " + strings.Join(p.Allowed, ", ")
	case List:
		return "a list of strings, e.g. [redis-server, --port, \"6379\"]"
	case Mapping:
		return "a mapping of names to strings, e.g. {GOMAXPROCS: \"2\"}"
	case Object:
		return p.CheckDoc
	}
	lo, hi := !math.IsNaN(p.Min), !math.IsNaN(p.Max)
	switch {
	case lo && hi:
		s += fmt.Sprintf(" from %s to %s", p.fmtBound(p.Min), p.fmtBound(p.Max))
	case lo:
		s += fmt.Sprintf(" of at least %s", p.fmtBound(p.Min))
	case hi:
		s += fmt.Sprintf(" of at most %s", p.fmtBound(p.Max))
	}
	return s
}

func (p Param) fmtBound(v float64) string {
	switch p.Kind {
	case Duration:
		return time.Duration(v * float64(time.Second)).String()
	case Size:
		return vocab.Size(v).String()
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Normalize parses a user-written value and returns its canonical string
// form (durations as Go durations, sizes as a byte count), or an error that
// says what is allowed.
func (p Param) Normalize(v string) (string, error) {
	v = strings.TrimSpace(v)
	if p.Auto && v == Auto {
		return Auto, nil
	}
	if p.Kind.Structured() {
		return p.normalizeStructured(v)
	}
	var num float64
	var canon string
	switch p.Kind {
	case Int:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not %s", v, p.Describe())
		}
		num, canon = float64(n), strconv.FormatInt(int64(n), 10)
	case Float:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("%q is not %s", v, p.Describe())
		}
		num, canon = f, strconv.FormatFloat(f, 'g', -1, 64)
	case Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", fmt.Errorf("%q is not %s", v, p.Describe())
		}
		num, canon = d.Seconds(), d.String()
	case Size:
		n, err := vocab.ParseSize(v)
		if err != nil {
			return "", fmt.Errorf("%q is not %s", v, p.Describe())
		}
		num, canon = float64(n), strconv.FormatInt(int64(n), 10)
	case Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("%q is not %s", v, p.Describe())
		}
		return strconv.FormatBool(b), nil
	case Enum:
		for _, a := range p.Allowed {
			if v == a {
				return v, nil
			}
		}
		return "", fmt.Errorf("%q is not %s", v, p.Describe())
	case String:
		if p.Pattern != "" && !regexp.MustCompile("^(?:"+p.Pattern+")$").MatchString(v) {
			return "", fmt.Errorf("%q is not %s", v, p.Describe())
		}
		return v, nil
	default:
		return "", fmt.Errorf("parameter %s has unknown kind %q", p.Name, p.Kind)
	}
	if (!math.IsNaN(p.Min) && num < p.Min) || (!math.IsNaN(p.Max) && num > p.Max) {
		return "", fmt.Errorf("%s is out of range: want %s", v, p.Describe())
	}
	return canon, nil
}

// Values are a workload's parameters in canonical string form.
type Values map[string]string

// Int returns an Int parameter (or a Size, in bytes); 0 for auto.
func (v Values) Int(name string) int64 {
	n, _ := strconv.ParseInt(v[name], 10, 64)
	return n
}

// IsAuto reports whether a parameter marked OrAuto is auto.
func (v Values) IsAuto(name string) bool { return v[name] == Auto }

// Float returns a Float parameter.
func (v Values) Float(name string) float64 {
	f, _ := strconv.ParseFloat(v[name], 64)
	return f
}

// Duration returns a Duration parameter.
func (v Values) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(v[name])
	return d
}

// Bool returns a Bool parameter.
func (v Values) Bool(name string) bool { b, _ := strconv.ParseBool(v[name]); return b }

// String returns a String or Enum parameter.
func (v Values) String(name string) string { return v[name] }

// Keys returns the parameter names, sorted.
func (v Values) Keys() []string {
	k := make([]string, 0, len(v))
	for n := range v {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}
