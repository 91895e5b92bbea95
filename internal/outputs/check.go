package outputs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Problem is one thing wrong with a contract, found before anything runs.
type Problem struct {
	Metric string // the metric at fault; "" when the fault is the contract's
	Key    string // the key at fault: format, metrics, name, unit, better, path, select, pattern or aggregate
	Msg    string // what is wrong, and what is allowed
}

// Error is the problem as a user reads it, naming the metric.
func (p Problem) Error() string {
	if p.Key == "format" || p.Key == "metrics" {
		return p.Msg
	}
	return fmt.Sprintf("metric %q: %s", p.Metric, p.Msg)
}

// At is where in the file's metrics mapping the problem is: the metric's
// name, then the key at fault (none for the contract's own problems).
func (p Problem) At() []string {
	switch {
	case p.Metric == "":
		return nil
	case p.Key == "" || p.Key == "name" || p.Key == "format" || p.Key == "metrics":
		return []string{p.Metric}
	}
	return []string{p.Metric, p.Key}
}

// Check returns every problem of c that can be known before its command
// runs, in the order of its metrics; none when Parse can read c.
func (c Contract) Check() []Problem {
	_, problems := c.compile()
	return problems
}

// selector is a metric ready to be read: its selector parsed, its
// aggregate resolved.
type selector struct {
	Metric
	agg Aggregate

	path []segment // json, jsonl

	row, col string // csv: the ROW and COL as written
	colNum   int    // csv: COL as a 1-based column number; 0 when COL is a name or *

	bench, unit string // benchfmt: the benchmark's name and unit

	re        *regexp.Regexp // regex, in multi-line mode
	group     int            // regex: the index of the group holding the value
	unitGroup int            // regex: the index of the group named unit, or -1
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// selectorKeys are the keys that say where a metric's value is.
var selectorKeys = []string{"path", "select", "pattern"}

const pathHelp = `a path is dot-separated keys and array indexes, e.g. result.latency.p99_ms or jobs.0.read.iops, ` +
	`with a key that holds a dot in brackets: percentile["99.000000"]`

// selectorHelp says, per format, what its selector looks like.
var selectorHelp = map[Format]string{
	JSON:     pathHelp,
	JSONL:    pathHelp,
	CSV:      `select is ROW,COL: ROW the first field of a record or * for the last record, COL a header name, a column number from 1, or * for the first number after the first field; e.g. 'SET,rps' or 'GET,*'`,
	Benchfmt: `select is 'NAME UNIT': a benchmark's name without Benchmark and -GOMAXPROCS, and a unit as printed; e.g. 'Encode/small ns/op'`,
	Regex:    `pattern is a Go regular expression with one group named value around the number; e.g. 'Requests/sec:\s+(?P<value>[0-9.]+)'`,
}

// compile readies c's metrics for reading, or says everything that
// stops it.
func (c Contract) compile() ([]selector, []Problem) {
	var problems []Problem
	known := slices.Contains(Formats(), c.Format)
	if !known {
		problems = append(problems, Problem{Key: "format",
			Msg: fmt.Sprintf("format %q is not one ctrbench reads; formats: %s", c.Format, joinAny(Formats()))})
	}
	if len(c.Metrics) == 0 {
		problems = append(problems, Problem{Key: "metrics",
			Msg: "the contract declares no metrics; declare at least one (the first is the workload's headline)"})
	}
	seen := map[string]bool{}
	sels := make([]selector, len(c.Metrics))
	for i, m := range c.Metrics {
		if seen[m.Name] {
			problems = append(problems, Problem{Metric: m.Name, Key: "name",
				Msg: "is declared twice; each metric of a workload has its own name"})
		}
		seen[m.Name] = true
		var ps []Problem
		sels[i], ps = compileMetric(c.Format, m, known)
		problems = append(problems, ps...)
	}
	return sels, problems
}

// compileMetric readies one metric of format f (known says whether f is
// a format: the selector of an unknown one is not judged).
func compileMetric(f Format, m Metric, known bool) (selector, []Problem) {
	var ps []Problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, Problem{Metric: m.Name, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if !nameRE.MatchString(m.Name) {
		bad("name", "the name is not allowed: a metric's name is lower-case letters, digits and underscores, "+
			"starting with a letter, e.g. p99_ms (no dots: ctrbench puts them between a metric's qualifiers)")
	}
	if strings.TrimSpace(m.Unit) == "" {
		bad("unit", "has no unit; give the unit its values are in, e.g. ms, req/s or ops")
	}
	switch {
	case m.Better == "":
		bad("better", "has no better; say which direction is an improvement: higher or lower")
	case !m.Better.Valid():
		bad("better", "better is %q; say which direction is an improvement: higher or lower", m.Better)
	}
	sel := selector{Metric: m, agg: m.Aggregate}
	if !known {
		return sel, ps
	}
	own := Keys(f)[0]
	for _, k := range selectorKeys {
		if k != own && selectorOf(m, k) != "" {
			bad(k, "has %s, which a %s metric does not have; its keys are %s", k, f, strings.Join(Keys(f), ", "))
		}
	}
	switch {
	case f == JSON && m.Aggregate != "":
		bad("aggregate", "has aggregate, which a json metric does not have (its path finds one value); its keys are %s",
			strings.Join(Keys(f), ", "))
	case m.Aggregate == "":
		sel.agg = defaultAggregate(f)
	case !slices.Contains(Aggregates(), m.Aggregate):
		bad("aggregate", "aggregate %q is not one ctrbench knows; aggregates: %s (%s when none is given)",
			m.Aggregate, joinAny(Aggregates()), defaultAggregate(f))
	}
	if selectorOf(m, own) == "" {
		bad(own, "has no %s; %s", own, selectorHelp[f])
		return sel, ps
	}
	if err := compileSelector(f, &sel); err != nil {
		bad(own, "%s %q %v; %s", own, selectorOf(m, own), err, selectorHelp[f])
	}
	return sel, ps
}

// compileSelector parses s's selector in format f into s.
func compileSelector(f Format, s *selector) error {
	var err error
	switch f {
	case JSON, JSONL:
		s.path, err = parsePath(s.Path)
	case CSV:
		s.row, s.col, s.colNum, err = parseCSVSelect(s.Select)
	case Benchfmt:
		s.bench, s.unit, err = parseBenchSelect(s.Select)
	case Regex:
		s.re, s.group, s.unitGroup, err = compilePattern(s.Pattern, s.Name)
		if err == nil && s.unitGroup >= 0 && timeUnits[s.Unit] == 0 {
			err = fmt.Errorf("has a group named unit, so the number is converted to the metric's unit, which must then be a time unit (%s), not %q", timeUnitList, s.Unit)
		}
	}
	return err
}

// selectorOf is m's selector key k.
func selectorOf(m Metric, k string) string {
	switch k {
	case "path":
		return m.Path
	case "select":
		return m.Select
	case "pattern":
		return m.Pattern
	}
	return ""
}

// joinAny lists words for a message: "a, b, c".
func joinAny[S ~string](words []S) string {
	s := make([]string, len(words))
	for i, w := range words {
		s[i] = string(w)
	}
	return strings.Join(s, ", ")
}
