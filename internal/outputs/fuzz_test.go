package outputs

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Parse never panics on a contract that passes Check, whatever the
// output: it gives every metric a finite value, or a *ParseError naming
// what is wrong and quoting the output's end.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		format           Format
		sel, agg, sample string
	}{
		{JSON, `jobs[0].read.clat_ns.percentile["99.000000"]`, "", "fio.json"},
		{JSONL, "lat_ms.p99", "max", "intervals.jsonl"},
		{CSV, "SET,*", "", "redis-benchmark.csv"},
		{CSV, "*,2", "sum", "redis-benchmark.csv"},
		{Benchfmt, "Encode/small ns/op", "mean", "gobench.txt"},
		{Regex, `Requests/sec:\s+(?P<value>[0-9.]+)`, "", "wrk.txt"},
		{Regex, `^\s+\d+%\s+(?P<value>[0-9.]+)ms$`, "count", "wrk.txt"},
	}
	for i, s := range seeds {
		f.Add(uint8(i), s.sel, s.agg, sample(f, s.sample))
		f.Add(uint8(i), s.sel, s.agg, sample(f, s.sample)[:len(sample(f, s.sample))/2])
	}
	formats := Formats()
	f.Fuzz(func(t *testing.T, format uint8, sel, agg string, out []byte) {
		c := in(formats[int(format)%len(formats)], Metric{Name: "m", Unit: "u", Better: result.Lower, Path: sel, Aggregate: Aggregate(agg)})
		if len(c.Check()) > 0 {
			return
		}
		values, err := c.Parse(out)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || len(pe.Errs) == 0 || !strings.HasSuffix(err.Error(), pe.Tail) {
				t.Fatalf("got %v", err)
			}
			return
		}
		if len(values) != 1 || values[0].Name != "m" || math.IsNaN(values[0].Value) || math.IsInf(values[0].Value, 0) {
			t.Fatalf("got %+v", values)
		}
	})
}
