// Package outputs is the metrics contract of a user's command: the format
// its output is in and the metrics read from it, each with a unit and a
// direction. It is the one place that knows the formats: Check says,
// before anything runs, everything that is wrong with a declared
// contract, and Parse reads a command's output into values. It is pure:
// it reads only the bytes it is given.
//
// An experiment file declares, per workload, a format and its metrics:
//
//	format: json
//	metrics:
//	  ops: {path: result.ops_per_sec, unit: ops/s, better: higher}
//	  p99: {path: result.latency.p99_ms, unit: ms, better: lower}
//
// A metric's name is lower-case letters, digits and underscores, starting
// with a letter (ctrbench puts dots between a metric's qualifiers, so a
// name has none). Its unit is any non-empty text and its better is higher
// or lower. The first metric declared is the workload's headline. Each
// metric has exactly one selector, the one its format reads: path (json,
// jsonl), select (csv, benchfmt) or pattern (regex).
//
// # Numbers
//
// A value is a decimal number: an optional sign, digits with at most one
// decimal point, an optional exponent (1234, -0.5, 1.2e6), surrounded by
// nothing but white space. Thousands separators, units, percent signs,
// hexadecimal, NaN and infinities are not numbers; a value too large for
// a float64 is an error too.
//
// # Several values of one metric
//
// Where a selector can find several values (jsonl, csv, benchfmt and
// regex), a metric's aggregate combines them: last (the default, except
// for benchfmt), first, mean (benchfmt's default: the runs of -count=N),
// sum, min, max or count (how many values were found). Every value found
// must be a number, whatever the aggregate. A metric for which nothing is
// found is missing: an error, also for count.
//
// # json
//
// The whole output, white space aside, is one JSON object. A path is
// dot-separated keys, walked from that object: result.latency.p99_ms. A
// segment of digits indexes an array (jobs.0.iops) or, in an object, is
// the key of those digits. A key that contains a dot or a bracket is
// written in brackets as a JSON string: jobs.0.read.clat_ns.percentile["99.000000"];
// an index may be written in brackets too: jobs[0]. The value found must
// be a JSON number, or a JSON string holding a number (some tools quote
// their numbers). json has no aggregate: a path finds one value.
//
// # jsonl
//
// One JSON object per line; a line of only white space is skipped, and
// any other line that is not a JSON object is an error naming its line
// number. A path (as for json) is read from every line that has it, and
// the values are combined by the aggregate.
//
// # csv
//
// RFC 4180 records (fields may be quoted; records may have different
// numbers of fields; space before a field is dropped). The first record
// is a header when none of its fields is a number. select is ROW,COL
// (itself read as a CSV record, so either may be quoted):
//
//   - ROW is matched exactly against the first field of each data record,
//     white space trimmed; * means the last data record. Several records
//     of one ROW are combined by the aggregate.
//   - COL is a header name, a column number counted from 1 (digits are
//     always a column number), or * meaning the first field after the
//     first one that is a number.
//
// redis-benchmark --csv prints a header "test","rps",...,"p99_latency_ms",...
// and one record per test, so select: 'SET,*' reads SET's requests per
// second and 'GET,p99_latency_ms' GET's 99th percentile.
//
// # benchfmt
//
// Go's benchmark format (go test -bench, and tools that print it),
// read with golang.org/x/perf/benchfmt. select is 'NAME UNIT': NAME is a
// benchmark's name without its Benchmark prefix, with or without its
// -GOMAXPROCS suffix (Encode/small for BenchmarkEncode/small-8), and UNIT
// a unit as the output prints it: ns/op, B/op, allocs/op, MB/s or a
// custom unit. The values of every line of that name (go test
// -count=N prints N) are combined by the aggregate, mean by default.
// Lines that are not benchmark results (goos:, PASS, ok, logs) are
// ignored, and so is a benchmark line that does not parse or is longer
// than 32 KiB.
//
// # regex
//
// A Go regular expression (RE2 syntax, https://pkg.go.dev/regexp/syntax)
// applied to the whole output in multi-line mode, so ^ and $ match at
// the start and end of each line. It has exactly one capturing group
// named value, or named after the metric, which holds the number and
// cannot match empty text; other groups may be present. Each match is a
// value, combined by the aggregate. wrk's "Requests/sec:  12345.67" is
// read by 'Requests/sec:\s+(?P<value>[0-9.]+)'. The number is taken as it
// is, unless the pattern also has a group named unit: then the metric's
// unit must be a time unit (ns, us, µs, ms, s, m, min, h) and the number
// is converted from the unit the group matched, for a tool that scales
// its units as it prints them (wrk prints 812.00us or 1.23ms):
// '99%\s+(?P<value>[0-9.]+)(?P<unit>us|ms|s)\b' with unit: ms.
package outputs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Format is the shape of a command's output.
type Format string

const (
	JSON     Format = "json"     // one JSON object
	JSONL    Format = "jsonl"    // one JSON object per line
	CSV      Format = "csv"      // comma-separated records, maybe with a header
	Benchfmt Format = "benchfmt" // Go's benchmark format
	Regex    Format = "regex"    // text, read by regular expressions
)

// Formats lists every format, in the order documentation shows them.
func Formats() []Format { return []Format{JSON, JSONL, CSV, Benchfmt, Regex} }

// Aggregate says how several values of one metric combine into one.
type Aggregate string

const (
	Last  Aggregate = "last"
	First Aggregate = "first"
	Mean  Aggregate = "mean"
	Sum   Aggregate = "sum"
	Min   Aggregate = "min"
	Max   Aggregate = "max"
	Count Aggregate = "count"
)

// Aggregates lists every aggregate, the default of most formats first.
func Aggregates() []Aggregate { return []Aggregate{Last, First, Mean, Sum, Min, Max, Count} }

// Metric is one number read from a command's output. Exactly one of
// Path, Select and Pattern is set, the one its format reads.
type Metric struct {
	Name      string        `json:"name"`
	Unit      string        `json:"unit"`
	Better    result.Better `json:"better"`
	Path      string        `json:"path,omitempty"`      // json, jsonl: keys and indexes, dot-separated
	Select    string        `json:"select,omitempty"`    // csv: ROW,COL; benchfmt: NAME UNIT
	Pattern   string        `json:"pattern,omitempty"`   // regex: a group named value holds the number
	Aggregate Aggregate     `json:"aggregate,omitempty"` // "" for the format's default
}

// Contract is what a workload reads from its command's output: the
// format and the metrics, in the order they were declared (the first is
// the workload's headline).
type Contract struct {
	Format  Format   `json:"format"`
	Metrics []Metric `json:"metrics"`
}

// Value is one metric's value as Parse read it.
type Value struct {
	Name   string        `json:"name"`
	Unit   string        `json:"unit"`
	Better result.Better `json:"better"`
	Value  float64       `json:"value"`
}

// Keys returns the keys a metric may have in format f, its selector
// first, or nil for a format that does not exist. The name is not among
// them: an experiment file gives it as the metric's own key.
func Keys(f Format) []string {
	switch f {
	case JSON:
		return []string{"path", "unit", "better"}
	case JSONL:
		return []string{"path", "aggregate", "unit", "better"}
	case CSV, Benchfmt:
		return []string{"select", "aggregate", "unit", "better"}
	case Regex:
		return []string{"pattern", "aggregate", "unit", "better"}
	}
	return nil
}

// defaultAggregate is the aggregate of a metric of format f that names
// none: the mean of benchfmt's repeated runs, elsewhere the last value.
func defaultAggregate(f Format) Aggregate {
	if f == Benchfmt {
		return Mean
	}
	return Last
}

// MetricFromKeys is the metric name declared with keys, as an experiment
// file gives them (unit: ms, path: …). It refuses only a key no metric of
// any format has; whether the keys fit the contract's format, and their
// values, are Check's to judge.
func MetricFromKeys(name string, keys map[string]string) (Metric, error) {
	m := Metric{Name: name}
	var unknown []string
	for k, v := range keys {
		switch k {
		case "unit":
			m.Unit = v
		case "better":
			m.Better = result.Better(v)
		case "path":
			m.Path = v
		case "select":
			m.Select = v
		case "pattern":
			m.Pattern = v
		case "aggregate":
			m.Aggregate = Aggregate(v)
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		verb := "are"
		if len(unknown) == 1 {
			verb = "is"
		}
		return m, fmt.Errorf("metric %q: %s %s not a metric's key; a metric's keys are path (json, jsonl), select (csv, benchfmt), "+
			"pattern (regex), aggregate, unit and better", name, strings.Join(quoteAll(unknown), ", "), verb)
	}
	return m, nil
}

// quoteAll quotes each of words.
func quoteAll(words []string) []string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return q
}
