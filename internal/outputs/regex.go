package outputs

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// compilePattern compiles a regex metric's pattern in multi-line mode,
// and finds its value group (the one group named value or name) and its
// optional unit group (named unit; -1 when there is none).
func compilePattern(pattern, name string) (re *regexp.Regexp, group, unit int, err error) {
	re, err = regexp.Compile("(?m)" + pattern)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("does not compile (%v)", err)
	}
	group, unit = -1, -1
	for i, n := range re.SubexpNames() {
		if n == "unit" {
			unit = i
		}
		if n != "value" && n != name {
			continue
		}
		if group >= 0 {
			return nil, 0, 0, fmt.Errorf("has two groups named value or %s: exactly one holds the number", name)
		}
		group = i
	}
	if group < 0 {
		return nil, 0, 0, fmt.Errorf("has no group named value (or %s): write (?P<value>…) around the number", name)
	}
	// The pattern compiled, so it parses.
	tree, _ := syntax.Parse("(?m)"+pattern, syntax.Perl)
	if g := findCapture(tree, group); g != nil && matchesEmpty(g) {
		return nil, 0, 0, errors.New("has a value group that can match empty text, which is never a number: make it need a digit, e.g. (?P<value>[0-9.]+)")
	}
	return re, group, unit, nil
}

// timeUnits are the units a unit group converts between, in seconds.
var timeUnits = map[string]float64{"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "min": 60, "h": 3600}

const timeUnitList = "ns, us, µs, ms, s, m, min or h"

// convertUnit is v, printed in unit from, in unit to (a time unit).
func convertUnit(v float64, from, to string) (float64, error) {
	f, ok := timeUnits[from]
	if !ok {
		return 0, fmt.Errorf("the unit group matched %q, which is not a time unit (%s)", from, timeUnitList)
	}
	return v * f / timeUnits[to], nil
}

// findCapture is the capturing group numbered n in re.
func findCapture(re *syntax.Regexp, n int) *syntax.Regexp {
	if re.Op == syntax.OpCapture && re.Cap == n {
		return re
	}
	for _, sub := range re.Sub {
		if g := findCapture(sub, n); g != nil {
			return g
		}
	}
	return nil
}

// matchesEmpty reports whether re can match empty text somewhere.
func matchesEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCapture, syntax.OpPlus:
		return matchesEmpty(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || matchesEmpty(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !matchesEmpty(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if matchesEmpty(sub) {
				return true
			}
		}
	}
	return false
}

// readRegex reads each metric's matches in out.
func readRegex(out []byte, sels []selector) *reading {
	r := newReading(sels)
	for i, s := range sels {
		matches := s.re.FindAllSubmatchIndex(out, -1)
		for _, m := range matches {
			start, end := m[2*s.group], m[2*s.group+1]
			var err error
			var v float64
			if start < 0 {
				err = errors.New("the pattern matched, but its value group took no part in the match")
			} else {
				v, err = number(string(out[start:end]))
			}
			if err == nil && s.unitGroup >= 0 && m[2*s.unitGroup] >= 0 {
				v, err = convertUnit(v, string(out[m[2*s.unitGroup]:m[2*s.unitGroup+1]]), s.Unit)
			}
			if err != nil {
				r.fail(i, 1+bytes.Count(out[:m[0]], []byte("\n")), err)
				break
			}
			r.add(i, v, 0)
		}
		if len(matches) == 0 {
			r.why[i] = "the pattern matches nowhere in the output"
		}
	}
	return r
}
