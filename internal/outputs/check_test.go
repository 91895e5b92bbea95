package outputs

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Every problem Check finds names its metric and key, and says what is
// allowed.
func TestCheckProblems(t *testing.T) {
	ok := m("ops", "ops", "")
	cases := []struct {
		name   string
		c      Contract
		metric string   // the metric named, "" for the contract's own problems
		key    string   // the key at fault
		want   []string // in the message: what is wrong, what is allowed
	}{
		{"unknown format", Contract{Format: "yaml", Metrics: []Metric{ok}}, "", "format",
			[]string{`format "yaml" is not one ctrbench reads`, "formats: json, jsonl, csv, benchfmt, regex"}},
		{"no metrics", Contract{Format: JSON}, "", "metrics", []string{"declares no metrics", "at least one"}},
		{"upper-case name", in(JSON, m("P99", "p99", "")), "P99", "name", []string{"lower-case letters, digits and underscores"}},
		{"dotted name", in(JSON, m("lat.p99", "p99", "")), "lat.p99", "name", []string{"no dots"}},
		{"empty name", in(JSON, m("", "p99", "")), "", "name", []string{"starting with a letter"}},
		{"twice", in(JSON, m("ops", "a", ""), m("ops", "b", "")), "ops", "name", []string{"declared twice", "its own name"}},
		{"no unit", in(JSON, Metric{Name: "ops", Better: result.Higher, Path: "ops"}), "ops", "unit", []string{"has no unit", "e.g. ms"}},
		{"blank unit", in(JSON, Metric{Name: "ops", Unit: " ", Better: result.Higher, Path: "ops"}), "ops", "unit", []string{"has no unit"}},
		{"better", in(JSON, Metric{Name: "ops", Unit: "u", Better: "up", Path: "ops"}), "ops", "better", []string{`better is "up"`, "higher or lower"}},
		{"no better", in(JSON, Metric{Name: "ops", Unit: "u", Path: "ops"}), "ops", "better", []string{"has no better", "higher or lower"}},
		{"json with select", Contract{Format: JSON, Metrics: []Metric{{Name: "ops", Unit: "u", Better: result.Higher, Path: "ops", Select: "a,b"}}},
			"ops", "select", []string{"has select, which a json metric does not have", "its keys are path, unit, better"}},
		{"json without path", Contract{Format: JSON, Metrics: []Metric{{Name: "ops", Unit: "u", Better: result.Higher}}},
			"ops", "path", []string{"has no path", "dot-separated keys"}},
		{"benchfmt with path", Contract{Format: Benchfmt, Metrics: []Metric{{Name: "ops", Unit: "u", Better: result.Higher, Path: "a", Select: "X ns/op"}}},
			"ops", "path", []string{"has path, which a benchfmt metric does not have", "its keys are select, aggregate, unit, better"}},
		{"regex without pattern", Contract{Format: Regex, Metrics: []Metric{{Name: "ops", Unit: "u", Better: result.Higher}}},
			"ops", "pattern", []string{"has no pattern", "group named value"}},
		{"json aggregate", in(JSON, m("ops", "ops", Max)), "ops", "aggregate",
			[]string{"has aggregate, which a json metric does not have", "its keys are path, unit, better"}},
		{"unknown aggregate", in(JSONL, m("ops", "ops", "median")), "ops", "aggregate",
			[]string{`aggregate "median"`, "last, first, mean, sum, min, max, count (last when none is given)"}},
		{"benchfmt's default aggregate", in(Benchfmt, m("ops", "X ns/op", "p50")), "ops", "aggregate", []string{"(mean when none is given)"}},
		{"empty segment", in(JSON, m("p99", "result..p99", "")), "p99", "path",
			[]string{`path "result..p99" has an empty segment`, "dot-separated keys and array indexes"}},
		{"trailing dot", in(JSONL, m("p99", "result.", "")), "p99", "path", []string{"has an empty segment"}},
		{"leading dot", in(JSON, m("p99", ".result", "")), "p99", "path", []string{"has an empty segment"}},
		{"dot before a bracket", in(JSON, m("p99", `a.["x"]`, "")), "p99", "path", []string{"has an empty segment"}},
		{"bad index", in(JSON, m("p99", "jobs[-1].iops", "")), "p99", "path",
			[]string{"has [-1], a bad index", "an index (digits) or a key in double quotes"}},
		{"word index", in(JSON, m("p99", "jobs[first]", "")), "p99", "path", []string{"has [first], a bad index"}},
		{"huge index", in(JSON, m("p99", "jobs[99999999999999999999]", "")), "p99", "path", []string{"a bad index"}},
		{"unclosed bracket", in(JSON, m("p99", "jobs[0", "")), "p99", "path", []string{"has a [ that no ] closes"}},
		{"unclosed key", in(JSON, m("p99", `p["99.0`, "")), "p99", "path", []string{"quoted key that is not a JSON string"}},
		{"key without ]", in(JSON, m("p99", `p["99.0"x`, "")), "p99", "path", []string{"quoted key with no ] after it"}},
		{"stray ]", in(JSON, m("p99", "p]", "")), "p99", "path", []string{"has a ] that no [ opens"}},
		{"text after a bracket", in(JSON, m("p99", "jobs[0]iops", "")), "p99", "path", []string{`has 'i' after a bracket`}},
		{"csv one field", in(CSV, m("set", "SET", "")), "set", "select", []string{`select "SET" is not ROW,COL`, "select is ROW,COL"}},
		{"csv three fields", in(CSV, m("set", "SET,rps,x", "")), "set", "select", []string{"is not ROW,COL"}},
		{"csv empty col", in(CSV, m("set", "SET, ", "")), "set", "select", []string{"has an empty ROW or COL", "e.g. 'SET,rps'"}},
		{"csv column 0", in(CSV, m("set", "SET,0", "")), "set", "select", []string{"columns count from 1"}},
		{"csv two lines", in(CSV, m("set", "SET,1\nGET,1", "")), "set", "select", []string{"is more than one line"}},
		{"benchfmt no unit", in(Benchfmt, m("enc", "Encode/small", "")), "enc", "select",
			[]string{`select "Encode/small" has no unit`, "'NAME UNIT'", "'Encode/small ns/op'"}},
		{"benchfmt three words", in(Benchfmt, m("enc", "Encode small ns/op", "")), "enc", "select", []string{"is not 'NAME UNIT'"}},
		{"regex does not compile", in(Regex, m("rps", `Requests/sec:\s+(?P<value>[0-9.]+`, "")), "rps", "pattern",
			[]string{"does not compile", "missing closing )", "Go regular expression"}},
		{"regex without value", in(Regex, m("rps", `Requests/sec:\s+([0-9.]+)`, "")), "rps", "pattern",
			[]string{"has no group named value (or rps)", "(?P<value>…)"}},
		{"regex two values", in(Regex, m("rps", `(?P<value>\d+) (?P<rps>\d+)`, "")), "rps", "pattern",
			[]string{"has two groups named value or rps", "exactly one"}},
		{"regex empty value", in(Regex, m("rps", `rps=(?P<value>[0-9]*)`, "")), "rps", "pattern",
			[]string{"can match empty text", "(?P<value>[0-9.]+)"}},
		{"regex unit group, unit not of time", in(Regex, m("p99", `99%\s+(?P<value>[0-9.]+)(?P<unit>us|ms)`, "")), "p99", "pattern",
			[]string{"has a group named unit", "must then be a time unit (ns, us", `not "u"`}},
		{"regex value maybe absent", in(Regex, m("rps", `rps=(?P<value>\d+|)`, "")), "rps", "pattern", []string{"can match empty text"}},
		{"regex value of anchors", in(Regex, m("rps", `rps=(?P<value>^$)`, "")), "rps", "pattern", []string{"can match empty text"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.c.Check()
			if len(ps) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(ps), ps)
			}
			p := ps[0]
			if p.Metric != tc.metric || p.Key != tc.key {
				t.Errorf("got metric %q key %q, want %q %q", p.Metric, p.Key, tc.metric, tc.key)
			}
			msg := p.Error()
			if tc.key != "format" && tc.key != "metrics" && !strings.HasPrefix(msg, `metric "`+tc.metric+`": `) {
				t.Errorf("%q does not name the metric first", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
		})
	}
}

// Check reports every problem at once, metric by metric.
func TestCheckReportsAll(t *testing.T) {
	c := Contract{Format: CSV, Metrics: []Metric{
		{Name: "A", Better: "up", Select: "x"},
		{Name: "ok", Unit: "u", Better: result.Lower, Select: "SET,rps"},
		{Name: "b", Unit: "u", Better: result.Lower, Path: "x", Aggregate: "avg"},
	}}
	var got []string
	for _, p := range c.Check() {
		got = append(got, p.Metric+"."+p.Key)
	}
	want := "A.name A.unit A.better A.select b.path b.aggregate b.select"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// An unknown format's metrics are checked for what needs no format.
func TestCheckUnknownFormat(t *testing.T) {
	ps := Contract{Format: "xml", Metrics: []Metric{{Name: "ops", Unit: "u", Better: result.Higher, Select: "a b"}}}.Check()
	if len(ps) != 1 || ps[0].Key != "format" {
		t.Fatalf("got %v, want only the format's problem", ps)
	}
}

func TestValidSelectors(t *testing.T) {
	cases := []Contract{
		in(JSON, m("a", `a["x.y"].b[0].c`, ""), m("b", `["quoted \"key\""]`, ""), m("c", "fio version", ""), m("d", "0.1", "")),
		in(JSONL, m("a", "a.b", Count)),
		in(CSV, m("a", `"GET, or not",*`, ""), m("b", "*,3", Sum)),
		in(Benchfmt, m("a", "  Encode/small-8   ns/op ", Min)),
		in(Regex, m("rps", `(?i)rps: (?P<rps>\d+)(?:\.\d+)?( req/s)?`, ""), m("value", `(?P<value>\d)`, "")),
	}
	for _, c := range cases {
		if ps := c.Check(); len(ps) > 0 {
			t.Errorf("%s: %v", c.Format, ps)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, f := range Formats() {
		keys := Keys(f)
		if len(keys) < 3 || keys[len(keys)-2] != "unit" || keys[len(keys)-1] != "better" {
			t.Errorf("%s: %v", f, keys)
		}
	}
	if Keys("xml") != nil {
		t.Error("an unknown format has keys")
	}
}

func TestMetricFromKeys(t *testing.T) {
	got, err := MetricFromKeys("p99", map[string]string{"select": "GET,p99_latency_ms", "unit": "ms", "better": "lower", "aggregate": "max"})
	want := Metric{Name: "p99", Unit: "ms", Better: result.Lower, Select: "GET,p99_latency_ms", Aggregate: Max}
	if err != nil || got != want {
		t.Fatalf("got %+v, %v", got, err)
	}
	_, err = MetricFromKeys("p99", map[string]string{"unit": "ms", "unti": "ms", "jsonpath": "a"})
	if err == nil || !strings.Contains(err.Error(), `metric "p99": "jsonpath", "unti" are not a metric's key`) ||
		!strings.Contains(err.Error(), "path (json, jsonl), select (csv, benchfmt), pattern (regex), aggregate, unit and better") {
		t.Fatalf("got %v", err)
	}
}
