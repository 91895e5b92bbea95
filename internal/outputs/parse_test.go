package outputs

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// sample is a tool's recorded output in testdata.
func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// m is a metric read by selector sel (the one its format uses) and
// combined by agg.
func m(name, sel string, agg Aggregate) Metric {
	return Metric{Name: name, Unit: "u", Better: result.Higher, Path: sel, Aggregate: agg}
}

// in moves each metric's selector from Path to the key format f reads.
func in(f Format, ms ...Metric) Contract {
	for i := range ms {
		sel := ms[i].Path
		ms[i].Path = ""
		switch Keys(f)[0] {
		case "path":
			ms[i].Path = sel
		case "select":
			ms[i].Select = sel
		case "pattern":
			ms[i].Pattern = sel
		}
	}
	return Contract{Format: f, Metrics: ms}
}

func TestParseRealOutputs(t *testing.T) {
	cases := []struct {
		name   string
		c      Contract
		sample string
		want   []float64
	}{
		{"fio json", in(JSON,
			m("iops", "jobs.0.read.iops", ""),
			m("p99", `jobs[0].read.clat_ns.percentile["99.000000"]`, ""),
			m("runtime", "global options.runtime", ""), // fio quotes its options' numbers
			m("util", "disk_util.0.util", ""),
			m("write_iops", "jobs.0.write.iops", ""),
		), "fio.json", []float64{87381.333333, 24448, 10, 98.765432, 0}},
		{"intervals jsonl", in(JSONL,
			m("ops", "ops", ""),
			m("ops_mean", "ops", Mean),
			m("ops_sum", "ops", Sum),
			m("ops_first", "ops", First),
			m("ops_min", "ops", Min),
			m("intervals", "t", Count),
			m("p99_max", "lat_ms.p99", Max),
			m("total", "summary.ops", ""),
			m("errors", "summary.errors", ""),
		), "intervals.jsonl", []float64{1250, 1250, 3750, 1200, 1200, 3, 3.4, 3750, 0}},
		{"redis-benchmark csv", in(CSV,
			m("set_rps", "SET,*", ""),
			m("get_p99", "GET,p99_latency_ms", ""),
			m("get_p99_by_number", "GET,7", ""),
			m("lrange_rps", `"LRANGE_100 (first 100 elements)",rps`, ""),
			m("last_rps", "*,rps", ""),
			m("mset_max", "MSET (10 keys), max_latency_ms", ""),
		), "redis-benchmark.csv", []float64{98039.22, 0.527, 0.527, 52356.02, 90090.09, 1.191}},
		{"go test -bench -count=3", in(Benchfmt,
			m("enc", "Encode/small ns/op", ""),
			m("enc_procs", "Encode/small-2 ns/op", ""),
			m("enc_mbps", "Encode/small MB/s", Max),
			m("large_bytes", "Encode/large B/op", ""),
			m("frames", "Decode frames/op", ""),
			m("runs", "Decode allocs/op", Count),
			m("dec_last", "Decode frames/op", Last),
		), "gobench.txt", []float64{1050, 1050, 244.27, 65536, 13, 3, 14}},
		{"wrk text", in(Regex,
			m("rps", `Requests/sec:\s+(?P<value>[0-9.]+)`, ""),
			m("latency", `Latency\s+(?P<value>[0-9.]+)ms`, ""),
			m("p99", `^\s+99%\s+(?P<p99>[0-9.]+)ms$`, ""),
			m("requests", `(?P<value>\d+) requests in`, ""),
			m("percentiles", `^\s+\d+%\s+(?P<value>[0-9.]+)ms$`, Count),
		), "wrk.txt", []float64{12269.13, 5.21, 9.87, 122814, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ps := tc.c.Check(); len(ps) > 0 {
				t.Fatalf("Check: %v", ps)
			}
			got, err := tc.c.Parse(sample(t, tc.sample))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d values, want %d", len(got), len(tc.want))
			}
			for i, v := range got {
				want := Value{Name: tc.c.Metrics[i].Name, Unit: "u", Better: result.Higher, Value: tc.want[i]}
				if v.Name != want.Name || v.Unit != want.Unit || v.Better != want.Better || math.Abs(v.Value-want.Value) > 1e-9*math.Abs(want.Value) {
					t.Errorf("value %d: got %+v, want %+v", i, v, want)
				}
			}
		})
	}
}

func TestParseCSVWithoutHeader(t *testing.T) {
	out := []byte("SET, 98000\nGET, 99000\nSET, 97000\n")
	c := in(CSV, m("set", "SET,2", Mean), m("sets", "SET,*", Count), m("last", "*,*", ""))
	got, err := c.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Value != 97500 || got[1].Value != 2 || got[2].Value != 97000 {
		t.Fatalf("got %+v: the first record is data when it has a number", got)
	}
	_, err = in(CSV, m("set", "SET,rps", "")).Parse(out)
	if err == nil || !strings.Contains(err.Error(), `metric "set"`) || !strings.Contains(err.Error(), "by its number") {
		t.Fatalf("a column name without a header: %v", err)
	}
}

// Parse's errors name the metric, say what is wrong, and quote the end of
// the output.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		c    Contract
		out  string
		want []string // in the message
	}{
		{"json path missing", in(JSON, m("p99", "result.latency.p99_ms", "")),
			`{"result": {"latency": {"p50_ms": 1.5, "p95_ms": 2.5}}}`,
			[]string{`metric "p99": missing`, `result.latency has no key "p99_ms"`, "p50_ms, p95_ms"}},
		{"json index beyond", in(JSON, m("iops", "jobs.3.iops", "")), `{"jobs": [{"iops": 1}]}`,
			[]string{`metric "iops"`, "array of 1 elements", "count from 0"}},
		{"json not a number", in(JSON, m("ops", "ops", "")), `{"ops": "fast"}`,
			[]string{`metric "ops"`, `"fast" is not a number`, "decimal number"}},
		{"json object, not a number", in(JSON, m("ops", "ops", "")), `{"ops": {"n": 1}}`,
			[]string{`metric "ops"`, "is an object, not a number"}},
		{"json NaN", in(JSON, m("ops", "ops", "")), `{"ops": "NaN"}`,
			[]string{`metric "ops"`, `"NaN" is not a finite number`}},
		{"json overflow", in(JSON, m("ops", "ops", "")), `{"ops": 1e400}`,
			[]string{`metric "ops"`, `"1e400" is not a finite number`}},
		{"json thousands separator", in(JSON, m("ops", "ops", "")), `{"ops": "12,345"}`,
			[]string{`metric "ops"`, "without separators"}},
		{"not json", in(JSON, m("ops", "ops", "")), "note: both iodepth and numjobs\n{\"ops\": 1}",
			[]string{"is not JSON: line 1", "json reads one JSON object"}},
		{"json then more", in(JSON, m("ops", "ops", "")), "{\"ops\": 1}\n{\"ops\": 2}\n",
			[]string{"is not JSON: line 2: invalid character '{' after top-level value", "one per line is jsonl"}},
		{"json array", in(JSON, m("ops", "ops", "")), `[1, 2]`, []string{"is an array, not a JSON object"}},
		{"empty", in(JSON, m("ops", "ops", "")), " \n", []string{"the output is empty", "the output was empty (2 bytes"}},
		{"jsonl line not json", in(JSONL, m("ops", "ops", "")), "{\"ops\": 1}\n\n2024/11/22 starting\n{\"ops\": 2}\n",
			[]string{"line 3 is not JSON", "one JSON object per line"}},
		{"jsonl line not an object", in(JSONL, m("ops", "ops", "")), "{\"ops\": 1}\n[1]\n",
			[]string{"line 2 is an array, not a JSON object"}},
		{"jsonl missing", in(JSONL, m("p99", "lat.p99", "")), "{\"lat\": {\"p50\": 1}}\n{\"lat\": 2}\n",
			[]string{`metric "p99": missing`, "none of its 2 lines has path lat.p99", "line 2: lat is a number, not an object"}},
		{"jsonl NaN on a line", in(JSONL, m("ops", "ops", "")), "{\"ops\": 1}\n{\"ops\": \"-Inf\"}\n",
			[]string{`metric "ops": line 2`, `"-Inf" is not a finite number`}},
		{"csv row missing", in(CSV, m("hset", "HSET,rps", "")), string(sample(t, "redis-benchmark.csv")),
			[]string{`metric "hset": missing`, `no record's first field is "HSET"`, "PING_INLINE, PING_MBULK, SET, GET"}},
		{"csv column missing", in(CSV, m("p999", "GET,p999_latency_ms", "")), string(sample(t, "redis-benchmark.csv")),
			[]string{`metric "p999"`, `the header has no column "p999_latency_ms"`, "p99_latency_ms"}},
		{"csv short record", in(CSV, m("x", "SET,9", "")), string(sample(t, "redis-benchmark.csv")),
			[]string{`metric "x": line 4: row "SET"`, "has 8 fields, no column 9"}},
		{"csv not a number", in(CSV, m("x", "SET,2", "")), "SET,1\nSET,n/a\n",
			[]string{`metric "x": line 2: row "SET"`, `"n/a" is not a number`}},
		{"csv no number for *", in(CSV, m("x", "SET,*", "")), "test,rps\nSET,fast\n",
			[]string{`metric "x"`, "has no number after its first field"}},
		{"csv bad quote", in(CSV, m("x", "SET,2", "")), "SET,\"1\"2\n", []string{"the output is not CSV", "RFC 4180"}},
		{"benchfmt name missing", in(Benchfmt, m("enc", "Encode/tiny ns/op", "")), string(sample(t, "gobench.txt")),
			[]string{`metric "enc": missing`, "no benchmark is named Encode/tiny", "Encode/small, Encode/large, Decode"}},
		{"benchfmt unit missing", in(Benchfmt, m("enc", "Encode/small frames/op", "")), string(sample(t, "gobench.txt")),
			[]string{`metric "enc": missing`, "benchmark Encode/small has no unit frames/op", "ns/op, MB/s, B/op, allocs/op"}},
		{"benchfmt NaN", in(Benchfmt, m("x", "X ns/op", "")), "BenchmarkX-2  100  NaN ns/op\n",
			[]string{`metric "x": line 1: NaN is not a finite number`}},
		{"benchfmt no results", in(Benchfmt, m("x", "X ns/op", "")), "PASS\nok  \tpkg\t0.1s\n",
			[]string{`metric "x": missing`, "no benchmark results"}},
		{"regex no match", in(Regex, m("rps", `Requests/sec:\s+(?P<value>[0-9.]+)`, "")), "unable to connect to 10.0.0.2:8080 Connection refused\n",
			[]string{`metric "rps": missing`, "matches nowhere", "Connection refused"}},
		{"regex not a number", in(Regex, m("rps", `rps=(?P<value>\S+)`, "")), "warmup\nrps=1,234\n",
			[]string{`metric "rps": line 2`, `"1,234" is not a number`}},
		{"regex group took no part", in(Regex, m("rps", `rps=(?:(?P<value>\d+)|none)`, "")), "rps=none\n",
			[]string{`metric "rps": line 1`, "value group took no part"}},
		{"several metrics", in(JSON, m("a", "a", ""), m("b", "b", ""), m("c", "c", "")), `{"b": 1}`,
			[]string{`metric "a": missing`, `metric "c": missing`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ps := tc.c.Check(); len(ps) > 0 {
				t.Fatalf("Check: %v", ps)
			}
			_, err := tc.c.Parse([]byte(tc.out))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			msg := err.Error()
			for _, w := range append(tc.want, "read as "+string(tc.c.Format)) {
				if !strings.Contains(msg, w) {
					t.Errorf("the message lacks %q:\n%s", w, msg)
				}
			}
			if !strings.Contains(msg, pe.Tail) || !strings.HasPrefix(pe.Tail, "the ") {
				t.Errorf("the message does not end with the output's tail:\n%s", msg)
			}
			if last := lastLine(tc.out); last != "" && !strings.Contains(pe.Tail, last) {
				t.Errorf("the tail lacks the output's last line %q:\n%s", last, pe.Tail)
			}
		})
	}
}

// lastLine is s's last line that is not white space.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// A contract with problems is not read, whatever the output.
// A unit group converts each match from the unit it printed into the
// metric's: wrk scales its latencies as it prints them.
func TestParseRegexUnitGroup(t *testing.T) {
	c := Contract{Format: Regex, Metrics: []Metric{
		{Name: "p50", Unit: "ms", Better: result.Lower, Pattern: `^\s+50%\s+(?P<value>[0-9.]+)(?P<unit>us|ms|s)\b`},
		{Name: "p99", Unit: "ms", Better: result.Lower, Pattern: `^\s+99%\s+(?P<value>[0-9.]+)(?P<unit>us|ms|s)\b`},
		{Name: "max_us", Unit: "us", Better: result.Lower, Pattern: `^\s+Latency.*\s(?P<value>[0-9.]+)(?P<unit>us|ms|s)\s+[0-9.]+%$`},
	}}
	if ps := c.Check(); len(ps) > 0 {
		t.Fatalf("Check: %v", ps)
	}
	out := "    Latency   412.00us  101.00us   1.20s    91.24%\n     50%  812.00us\n     99%    1.23s\n"
	got, err := c.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.812, 1230, 1.2e6} {
		if math.Abs(got[i].Value-want) > 1e-9*want {
			t.Errorf("%s = %v, want %v", got[i].Name, got[i].Value, want)
		}
	}
	// A unit the conversion does not know fails the metric, saying so.
	bad := Contract{Format: Regex, Metrics: []Metric{{Name: "p99", Unit: "ms", Better: result.Lower, Pattern: `99%\s+(?P<value>[0-9.]+)(?P<unit>[a-z]+)`}}}
	if _, err := bad.Parse([]byte("99% 3.00kb\n")); err == nil || !strings.Contains(err.Error(), `"kb", which is not a time unit`) {
		t.Fatalf("unknown unit: got %v", err)
	}
}

func TestParseRefusesABadContract(t *testing.T) {
	_, err := in(Regex, m("rps", `(`, "")).Parse([]byte("rps 1"))
	if err == nil || !strings.Contains(err.Error(), "contract cannot be read") || !strings.Contains(err.Error(), `metric "rps"`) {
		t.Fatalf("got %v", err)
	}
}

func TestAggregates(t *testing.T) {
	out := []byte("v=4\nv=1\nv=7\nv=2\n")
	want := map[Aggregate]float64{Last: 2, First: 4, Mean: 3.5, Sum: 14, Min: 1, Max: 7, Count: 4}
	for _, g := range Aggregates() {
		got, err := in(Regex, m("v", `v=(?P<value>\d+)`, g)).Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Value != want[g] {
			t.Errorf("%s: got %v, want %v", g, got[0].Value, want[g])
		}
	}
	_, err := in(Regex, m("v", `v=(?P<value>\S+)`, Sum)).Parse([]byte("v=1e308\nv=1e308\n"))
	if err == nil || !strings.Contains(err.Error(), `metric "v": the sum of its 2 values is not a finite number`) {
		t.Fatalf("an overflowing sum: %v", err)
	}
}

func TestNumbers(t *testing.T) {
	good := map[string]float64{"1234": 1234, " -0.5 ": -0.5, "+3": 3, "1.2e6": 1.2e6, ".5": .5, "5.": 5, "1E-3": 1e-3}
	for s, want := range good {
		if got, err := number(s); err != nil || got != want {
			t.Errorf("number(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", ".", "1,000", "1_000", "0x10", "12ms", "50%", "NaN", "inf", "-Infinity", "1e", "e5", "1.2.3", "--1", "1e400"} {
		if got, err := number(s); err == nil {
			t.Errorf("number(%q) = %v, want an error", s, got)
		}
	}
}

// The contract travels to the agent as JSON and comes back the same.
func TestContractJSON(t *testing.T) {
	c := Contract{Format: Regex, Metrics: []Metric{
		{Name: "rps", Unit: "req/s", Better: result.Higher, Pattern: `Requests/sec:\s+(?P<value>[0-9.]+)`, Aggregate: Max},
	}}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"format":"regex","metrics":[{"name":"rps","unit":"req/s","better":"higher","pattern":"Requests/sec:\\s+(?P\u003cvalue\u003e[0-9.]+)","aggregate":"max"}]}`; string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	var back Contract
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("got %+v, %v", back, err)
	}
}
