package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// schemaDir holds the JSON Schemas of the outputs (docs/schema/README.md).
const schemaDir = "../../docs/schema"

// validateScript checks the schema (argv[1]) against draft 2020-12's
// meta-schema, then validates each document of the JSON array in argv[2]
// and prints, per document, its errors ([] when it is valid).
const validateScript = `
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
out = []
for doc in json.load(open(sys.argv[2])):
    out.append(sorted("/".join(str(p) for p in e.absolute_path) + ": " + e.message for e in v.iter_errors(doc)))
print(json.dumps(out))
`

// validate runs python3-jsonschema's Draft202012Validator with the
// schema on each document and returns each one's errors.
func validate(t *testing.T, schema string, docs [][]byte) [][]string {
	t.Helper()
	raw := make([]json.RawMessage, len(docs))
	for i, d := range docs {
		raw[i] = d
	}
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "docs.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(systemPython, "-c", validateScript, schema, file).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("the validator failed on %s: %v\n%s", schema, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var errs [][]string
	if err := json.Unmarshal(out, &errs); err != nil || len(errs) != len(docs) {
		t.Fatalf("validator printed %q (%v), want %d lists of errors", out, err, len(docs))
	}
	return errs
}

// schemaDoc is what the tests read of a schema: an object's properties,
// required and definitions, and the report's CSV columns.
type schemaDoc struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Additional *bool                      `json:"additionalProperties"`
	Defs       map[string]schemaDoc       `json:"$defs"`
	CSVColumns []string                   `json:"x-csv-columns"`
}

// loadSchema reads a schema and checks what the validator cannot: every
// property of the objects named (a definition, or "" for the top level)
// is described, required names a property, and an unknown property is
// refused.
func loadSchema(t *testing.T, path string, objects ...string) schemaDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s schemaDoc
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, name := range objects {
		o := s
		if name != "" {
			o = s.Defs[name]
		}
		if len(o.Properties) == 0 || o.Additional == nil || *o.Additional {
			t.Errorf("%s: object %q has no properties or allows others (additionalProperties must be false)", path, name)
		}
		for p, raw := range o.Properties {
			var d struct{ Description string }
			if err := json.Unmarshal(raw, &d); err != nil || len(d.Description) < 10 {
				t.Errorf("%s: %q.%s is not described", path, name, p)
			}
		}
		for _, r := range o.Required {
			if _, ok := o.Properties[r]; !ok {
				t.Errorf("%s: %q requires %s, which it does not define", path, name, r)
			}
		}
	}
	return s
}

// keysOf adds the keys of each object to seen.
func keysOf(seen map[string]bool, objs []map[string]json.RawMessage) {
	for _, o := range objs {
		for k := range o {
			seen[k] = true
		}
	}
}

// unused are the properties no output had: a field the code no longer
// writes, or one the outputs tested do not reach.
func unused(props map[string]json.RawMessage, seen map[string]bool) []string {
	var out []string
	for p := range props {
		if !seen[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// mutate is a copy of the JSON object with key set to value (deleted
// when value is nil).
func mutate(t *testing.T, obj map[string]json.RawMessage, key string, value any) map[string]json.RawMessage {
	t.Helper()
	out := make(map[string]json.RawMessage, len(obj)+1)
	for k, v := range obj {
		out[k] = v
	}
	if value == nil {
		delete(out, key)
		return out
	}
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	out[key] = b
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// badDoc is a document the schema must refuse, with what the validator
// must say.
type badDoc struct {
	name, want string
	doc        []byte
}

// checkVerdicts fails the test for a valid document with errors and for
// a bad one without the error it must have.
func checkVerdicts(t *testing.T, names []string, bad []badDoc, errs [][]string) {
	t.Helper()
	for i, name := range names {
		if len(errs[i]) > 0 {
			t.Errorf("%s does not match the schema:\n%s", name, strings.Join(errs[i][:min(len(errs[i]), 20)], "\n"))
		}
	}
	for i, b := range bad {
		got := errs[len(names)+i]
		if !slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, b.want) }) {
			t.Errorf("%s: the validator said %q, want an error with %q", b.name, got, b.want)
		}
	}
}

// reportOutput is one report in both forms.
type reportOutput struct {
	name      string
	json, csv []byte
}

// reportOutputs are real reports: `report --format json` and `csv` of
// two stored campaigns (beforeAfter) and of the two golden campaigns of
// an earlier store (pairs; coloc, with neighbours), and the formats'
// output for rows with every optional field (everyFieldRows).
func reportOutputs(t *testing.T) []reportOutput {
	t.Helper()
	ctx := context.Background()
	cli := func(name, db, campaign string) reportOutput {
		o := reportOutput{name: name}
		for _, f := range []string{"json", "csv"} {
			var out, errOut bytes.Buffer
			if code := Main(ctx, []string{"report", "--db", db, "--campaign", campaign, "--format", f}, &out, &errOut); code != 0 {
				t.Fatalf("report %s --format %s: exit %d: %s", campaign, f, code, errOut.String())
			}
			if f == "json" {
				o.json = out.Bytes()
			} else {
				o.csv = out.Bytes()
			}
		}
		return o
	}
	ba, stored := beforeAfter(t), storedCopy(t)
	outs := []reportOutput{cli("before", ba, "before"), cli("after", ba, "after"),
		cli("stored pairs", stored, "golden-pairs-20261122-224432-85cf"), cli("stored coloc", stored, "golden-coloc-20261122-224331-8012")}
	every := reportOutput{name: "every field"}
	rows := everyFieldRows()
	var js, cs bytes.Buffer
	if err := report.JSON(&js, rows); err != nil {
		t.Fatal(err)
	}
	if err := report.CSV(&cs, rows); err != nil {
		t.Fatal(err)
	}
	every.json, every.csv = js.Bytes(), cs.Bytes()
	return append(outs, every)
}

// everyFieldRows are rows that between them have every field: a
// baseline; a cell with neighbours and instances, in an adaptive
// campaign with a calibration, a flagged trial and an outlier; a metric
// whose baseline mean is 0; two trials of a platform under emulation.
func everyFieldRows() []analysis.Row {
	base := []float64{10.0, 10.2, 9.9, 10.1, 10.05, 9.95, 10.0, 10.1, 9.9, 10.0}
	busy := []float64{11.0, 11.1, 10.9, 11.05, 10.95, 11.0, 11.1, 10.9, 11.0, 25.0}
	seqs := func(first, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = first + i
		}
		return out
	}
	mk := func(id int, level, metric string, vals, baseVals []float64) analysis.Series {
		return analysis.Series{Identity: analysis.Identity{Campaign: "every", Workload: "w", WorkloadType: "cpu.primes", ID: result.Observation{Metric: metric}.ID(),
			Unit: "ms", Better: result.Lower, Cell: map[string]string{"platform": level}, CellID: id},
			Values: vals, Seqs: seqs(10*id, len(vals)), Baseline: baseVals, IsBaseline: id == 1}
	}
	baseline := mk(1, "native", "latency", base, base)
	baseline.TargetRCI = 0.05
	busyCell := mk(2, "docker", "latency", busy, base)
	busyCell.Interference, busyCell.Slowdown, busyCell.PerInstance, busyCell.BasePerInstance = true, true, busy, base
	busyCell.TargetRCI, busyCell.NoiseCVPct = 0.05, 2
	busyCell.Flagged, busyCell.FlaggedValues, busyCell.FlaggedSeqs = 1, []float64{12}, []int{99}
	zero := mk(2, "docker", "delta", []float64{2, 3, 2, 3}, []float64{-1, 1, -1, 1, 0})
	emulated := mk(3, "vm", "latency", []float64{10, 11}, base)
	emulated.NotComparable = "a virtual machine under emulation"
	zeroBase := mk(1, "native", "delta", []float64{-1, 1, -1, 1, 0}, []float64{-1, 1, -1, 1, 0})
	return analysis.Rows([]analysis.Series{baseline, busyCell, emulated, zeroBase, zero})
}

// checkReportCSV checks a report's CSV against its JSON and the schema:
// the header is x-csv-columns expanded (cell to f:<factor> in the
// tables' order, an interval to _low and _high), a line per row, and
// schema_version 1 first on each.
func checkReportCSV(t *testing.T, s schemaDoc, o reportOutput, rows []map[string]json.RawMessage) {
	t.Helper()
	var factors []string
	for _, r := range rows {
		var cell map[string]string
		if err := json.Unmarshal(r["cell"], &cell); err != nil {
			t.Fatalf("%s: cell %s: %v", o.name, r["cell"], err)
		}
		for k := range cell {
			if !slices.Contains(factors, k) {
				factors = append(factors, k)
			}
		}
	}
	analysis.SortFactors(factors)
	var want []string
	for _, name := range s.CSVColumns {
		raw, ok := s.Defs["row"].Properties[name]
		if !ok {
			t.Errorf("x-csv-columns names %s, which a row does not have", name)
			continue
		}
		var p struct {
			Type any    `json:"type"`
			Ref  string `json:"$ref"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		switch {
		case p.Type == "object":
			for _, f := range factors {
				want = append(want, "f:"+f)
			}
		case strings.HasPrefix(p.Ref, "#/$defs/interval"):
			base := strings.TrimSuffix(name, "_ci95")
			want = append(want, base+"_low", base+"_high")
		default:
			want = append(want, name)
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(o.csv)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: CSV: %v", o.name, err)
	}
	if got := recs[0]; !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: the CSV header parts from the schema's x-csv-columns at column %d: %q, want %q", o.name, i+1, got[i:], want[i:])
	}
	if len(recs)-1 != len(rows) {
		t.Errorf("%s: %d CSV lines, %d JSON rows", o.name, len(recs)-1, len(rows))
	}
	for i, rec := range recs[1:] {
		if rec[0] != "1" {
			t.Errorf("%s: CSV line %d starts %q, want schema_version 1", o.name, i+2, rec[0])
		}
	}
}

// Real `report --format json` output matches docs/schema/report-v1's
// JSON Schema by the real validator (python3-jsonschema), which also
// checks the schema against draft 2020-12; between them the outputs have
// every property the schema defines; the CSV has the columns the schema
// lists; and rows the schema must refuse (an unknown field, a wrong type,
// a missing field, another version) are refused.
func TestReportSchema(t *testing.T) {
	requireReader(t, "jsonschema", "python3-jsonschema")
	path := filepath.Join(schemaDir, fmt.Sprintf("report-v%d.schema.json", report.SchemaVersion))
	s := loadSchema(t, path, "row")
	outs := reportOutputs(t)
	var docs [][]byte
	var names []string
	seen := map[string]bool{}
	var sample, compared map[string]json.RawMessage
	for _, o := range outs {
		var rows []map[string]json.RawMessage
		if err := json.Unmarshal(o.json, &rows); err != nil || len(rows) == 0 {
			t.Fatalf("%s: %d rows, %v", o.name, len(rows), err)
		}
		docs, names = append(docs, o.json), append(names, o.name+" (report --format json)")
		keysOf(seen, rows)
		checkReportCSV(t, s, o, rows)
		for _, r := range rows {
			if string(r["baseline"]) == "false" && string(r["vs_baseline_pct"]) != "null" {
				compared = r
			}
		}
		sample = rows[0]
	}
	if u := unused(s.Defs["row"].Properties, seen); len(u) > 0 {
		t.Errorf("no output has %v: remove them from the schema, or make an output here have them", u)
	}
	bad := []badDoc{
		{"an unknown field", "Additional properties are not allowed ('bogus' was unexpected)", mustJSON(t, []any{mutate(t, sample, "bogus", 1)})},
		{"n a string", "n: '8' is not of type 'integer'", mustJSON(t, []any{mutate(t, sample, "n", "8")})},
		{"mean missing", "'mean' is a required property", mustJSON(t, []any{mutate(t, sample, "mean", nil)})},
		{"another version", "schema_version: 1 was expected", mustJSON(t, []any{mutate(t, sample, "schema_version", 2)})},
		{"better unknown", "better: 'faster' is not one of", mustJSON(t, []any{mutate(t, sample, "better", "faster")})},
		{"a compared baseline", "is not of type 'null'", mustJSON(t, []any{mutate(t, compared, "baseline", true)})},
		{"not an array", "is not of type 'array'", mustJSON(t, sample)},
	}
	for _, b := range bad {
		docs = append(docs, b.doc)
	}
	checkVerdicts(t, names, bad, validate(t, path, docs))
}

// addOther stores a third campaign, other, in the results file of
// beforeAfter: another kernel, native's throughput with a single trial,
// and podman, a cell neither before nor after ran (docker is not in it).
func addOther(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	camp := result.Campaign{ID: "other", Name: "bench", SpecPath: "bench.yaml", Status: "done", Started: time.Unix(1e9+9, 0),
		Env: map[string]string{result.EnvKernel: "6.12", result.EnvHostname: "h"}}
	cells := []result.Cell{
		{ID: 1, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": "native"}, Params: map[string]string{}},
		{ID: 2, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": "podman"}, Params: map[string]string{}},
	}
	if err := db.CreateCampaign(ctx, camp); err != nil {
		t.Fatal(err)
	}
	if err := db.AddCells(ctx, camp.ID, cells); err != nil {
		t.Fatal(err)
	}
	for seq, cell := range []int{1, 2, 2, 2} {
		tr := result.Trial{CampaignID: camp.ID, CellID: cell, Seq: seq + 1, Repetition: seq + 1, Status: result.OK, Started: camp.Started, Ended: camp.Started,
			Observations: []result.Observation{{Metric: "throughput", Value: 9 + float64(seq)/10, Unit: "Gbit/s", Better: result.Higher}}}
		if _, err := db.RecordTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
}

// addLimited adds campaign limited to the results file at path: before's
// cells run with cpus=0.5 (a --set 'factors.cpus=[0.5]'), a setting
// compare matches the cells without.
func addLimited(t *testing.T, path string) {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	camp := result.Campaign{ID: "limited", Name: "bench", SpecPath: "bench.yaml", Status: "done", Started: time.Unix(1e9+10, 0),
		Env: map[string]string{result.EnvKernel: "6.1", result.EnvHostname: "h"}}
	var cells []result.Cell
	for i, p := range []string{"native", "docker"} {
		cells = append(cells, result.Cell{ID: i + 1, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": p, "cpus": "0.5"}, Params: map[string]string{}})
	}
	storeCampaign(t, db, camp, cells, 3, func(c result.Cell) result.Observation {
		return result.Observation{Metric: "throughput", Value: 9 + float64(c.ID)/10, Unit: "Gbit/s", Better: result.Higher}
	})
}

// Real `compare --format json` output matches docs/schema/compare-v1's
// JSON Schema by the real validator: a regression (before against after,
// also with --all-metrics), a comparison with an environment
// difference, cells only one side ran and a change with too few trials,
// and one whose settings differ (before against limited, run with
// cpus=0.5); between them they have every property the schema defines;
// documents the schema must refuse are refused.
func TestCompareSchema(t *testing.T) {
	requireReader(t, "jsonschema", "python3-jsonschema")
	path := filepath.Join(schemaDir, fmt.Sprintf("compare-v%d.schema.json", report.SchemaVersion))
	s := loadSchema(t, path, "", "change", "envDifference", "settingDifference")
	db := beforeAfter(t)
	addOther(t, db)
	addLimited(t, db)
	var docs [][]byte
	var names []string
	seen := map[string]map[string]bool{"": {}, "change": {}, "envDifference": {}, "settingDifference": {}}
	var sample map[string]json.RawMessage
	for _, args := range [][]string{{"before", "after"}, {"before", "after", "--all-metrics"}, {"before", "other"}, {"before", "limited"}} {
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), append([]string{"compare", "--db", db, "--threshold", "5%", "--format", "json"}, args...), &out, &errOut); code != 0 && code != ExitError {
			t.Fatalf("compare %v: exit %d: %s", args, code, errOut.String())
		}
		var top map[string]json.RawMessage
		var doc struct {
			Changes  []map[string]json.RawMessage `json:"changes"`
			Env      []map[string]json.RawMessage `json:"env_differences"`
			Settings []map[string]json.RawMessage `json:"settings_differences"`
		}
		if err := json.Unmarshal(out.Bytes(), &top); err != nil || json.Unmarshal(out.Bytes(), &doc) != nil {
			t.Fatalf("compare %v: %v\n%s", args, err, out.String())
		}
		sample = top
		keysOf(seen[""], []map[string]json.RawMessage{top})
		keysOf(seen["change"], doc.Changes)
		keysOf(seen["envDifference"], doc.Env)
		keysOf(seen["settingDifference"], doc.Settings)
		docs, names = append(docs, out.Bytes()), append(names, "compare "+strings.Join(args, " "))
	}
	for name, keys := range seen {
		o := s
		if name != "" {
			o = s.Defs[name]
		}
		if u := unused(o.Properties, keys); len(u) > 0 {
			t.Errorf("no comparison has %q's %v: remove them from the schema, or make a comparison here have them", name, u)
		}
	}
	var changes []map[string]json.RawMessage
	if err := json.Unmarshal(sample["changes"], &changes); err != nil || len(changes) == 0 {
		t.Fatalf("changes %s: %v", sample["changes"], err)
	}
	bad := []badDoc{
		{"an unknown field", "Additional properties are not allowed ('bogus' was unexpected)", mustJSON(t, mutate(t, sample, "bogus", true))},
		{"an unknown field in a change", "changes/0: Additional properties are not allowed ('bogus' was unexpected)",
			mustJSON(t, mutate(t, sample, "changes", []any{mutate(t, changes[0], "bogus", 1)}))},
		{"a_n a string", "changes/0/a_n: '8' is not of type 'integer'", mustJSON(t, mutate(t, sample, "changes", []any{mutate(t, changes[0], "a_n", "8")}))},
		{"an unknown verdict", "changes/0/verdict: 'worse' is not one of", mustJSON(t, mutate(t, sample, "changes", []any{mutate(t, changes[0], "verdict", "worse")}))},
		{"no version", "'schema_version' is a required property", mustJSON(t, mutate(t, sample, "schema_version", nil))},
		{"a setting without its workloads", "settings_differences/0: 'workloads' is a required property",
			mustJSON(t, mutate(t, sample, "settings_differences", []any{map[string]any{"factor": "cpus", "a": "", "b": "0.5"}}))},
	}
	for _, b := range bad {
		docs = append(docs, b.doc)
	}
	checkVerdicts(t, names, bad, validate(t, path, docs))
}
