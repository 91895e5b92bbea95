package outputs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// parseBenchSelect reads a benchfmt selector, 'NAME UNIT'.
func parseBenchSelect(s string) (name, unit string, err error) {
	f := strings.Fields(s)
	switch {
	case len(f) == 1:
		return "", "", errors.New("has no unit")
	case len(f) != 2:
		return "", "", errors.New("is not 'NAME UNIT'")
	}
	return f[0], f[1], nil
}

// maxBenchLine is the longest line read as a benchmark result; a longer
// one is something else that starts with "Benchmark".
const maxBenchLine = 32 << 10

// readBenchfmt reads out's benchmark results.
func readBenchfmt(out []byte, sels []selector) *reading {
	r := newReading(sels)
	lines := &benchmarkLines{rest: out}
	br := benchfmt.NewReader(lines, "output")
	seen := &names{what: "benchmarks"}
	units := make([]string, len(sels)) // per metric: the units its benchmark has, when none is its unit
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		_, n := res.Pos()
		line := lines.numbers[n-1]
		full, short := res.Name.Full(), withoutProcs(res.Name.Full())
		seen.add(string(short))
		for i, s := range sels {
			if string(full) != s.bench && string(short) != s.bench {
				continue
			}
			v, ok := printed(res, s.unit)
			if !ok {
				units[i] = printedUnits(res)
				continue
			}
			r.add(i, v, line)
		}
	}
	for i, s := range sels {
		switch {
		case r.accs[i].n > 0:
		case units[i] != "":
			r.why[i] = fmt.Sprintf("benchmark %s has no unit %s; its units: %s", s.bench, s.unit, units[i])
		case seen.n == 0:
			r.why[i] = "the output has no benchmark results (lines such as BenchmarkName-8  1000  1234 ns/op)"
		default:
			r.why[i] = fmt.Sprintf("no benchmark is named %s; %s", s.bench, seen)
		}
	}
	return r
}

// withoutProcs is a benchmark's name without its -GOMAXPROCS suffix.
func withoutProcs(name []byte) []byte {
	i := bytes.LastIndexByte(name, '-')
	if i < 0 || i == len(name)-1 || !digitsOnly(string(name[i+1:])) {
		return name
	}
	return name[:i]
}

// printed is res's value in unit as the output printed it: benchfmt
// turns ns/op into sec/op and MB/s into B/s, and keeps the original.
func printed(res *benchfmt.Result, unit string) (float64, bool) {
	for _, v := range res.Values {
		if v.OrigUnit == unit || (v.OrigUnit == "" && v.Unit == unit) {
			if v.OrigUnit != "" {
				return v.OrigValue, true
			}
			return v.Value, true
		}
	}
	return 0, false
}

// printedUnits lists res's units as the output printed them.
func printedUnits(res *benchfmt.Result) string {
	units := make([]string, len(res.Values))
	for i, v := range res.Values {
		units[i] = v.Unit
		if v.OrigUnit != "" {
			units[i] = v.OrigUnit
		}
	}
	return strings.Join(units, ", ")
}

// benchmarkLines reads only the lines of an output that may be benchmark
// results: those that start with "Benchmark" and are at most
// maxBenchLine long. The reader then never meets a line too long for it,
// and skips the rest of the output without reading it.
type benchmarkLines struct {
	rest    []byte // the output not yet looked at
	line    int    // the line number of rest's first line
	cur     []byte // the part of the current line not yet read
	numbers []int  // the line number in the output of each line passed on
}

func (b *benchmarkLines) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if len(b.rest) == 0 {
			return 0, io.EOF
		}
		end := bytes.IndexByte(b.rest, '\n') + 1
		if end == 0 {
			end = len(b.rest)
		}
		line := b.rest[:end]
		b.rest = b.rest[end:]
		b.line++
		if bytes.HasPrefix(line, []byte("Benchmark")) && len(line) <= maxBenchLine {
			b.cur = line
			b.numbers = append(b.numbers, b.line)
		}
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}
