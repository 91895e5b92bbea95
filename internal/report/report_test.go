package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// jsonRow mirrors the JSON contract with pointers, so null is observable.
type jsonRow struct {
	Workload       string            `json:"workload"`
	Metric         string            `json:"metric"`
	Cell           map[string]string `json:"cell"`
	N              int               `json:"n"`
	Failed         int               `json:"failed"`
	Mean           *float64          `json:"mean"`
	SD             *float64          `json:"sd"`
	RSDPct         *float64          `json:"rsd_pct"`
	CI95           [2]*float64       `json:"ci95"`
	VsBaselinePct  *float64          `json:"vs_baseline_pct"`
	VsBaselineCI95 *[2]float64       `json:"vs_baseline_ci95"`
	PValue         *float64          `json:"p_value"`
	Significant    *bool             `json:"significant"`
	Baseline       bool              `json:"baseline"`
}

// TestJSONValues decodes the JSON output and checks it against
// internal/stats computed directly from the fixture.
func TestJSONValues(t *testing.T) {
	series := fixture()
	var buf bytes.Buffer
	if err := JSON(&buf, analysis.Rows(series)); err != nil {
		t.Fatal(err)
	}
	var got []jsonRow
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(series) {
		t.Fatalf("%d rows, want %d", len(got), len(series))
	}
	byKey := map[string]jsonRow{}
	for _, r := range got {
		byKey[r.Workload+"/"+r.Metric+"/"+result.FactorString(r.Cell)] = r
	}
	for _, s := range series {
		key := s.Workload + "/" + s.ID.String() + "/" + result.FactorString(s.Cell)
		r, ok := byKey[key]
		if !ok {
			t.Errorf("%s: missing", key)
			continue
		}
		sum := stats.Summarize(s.Values)
		if r.N != sum.N || r.Failed != s.Failed || r.Baseline != s.IsBaseline {
			t.Errorf("%s: n %d failed %d baseline %v", key, r.N, r.Failed, r.Baseline)
		}
		checkNum(t, key+" mean", r.Mean, sum.Mean)
		checkNum(t, key+" sd", r.SD, sum.SD)
		checkNum(t, key+" rsd_pct", r.RSDPct, sum.RSDPct)
		checkNum(t, key+" ci95[0]", r.CI95[0], sum.CI95[0])
		checkNum(t, key+" ci95[1]", r.CI95[1], sum.CI95[1])

		c, ok := stats.Compare(s.Values, s.Baseline)
		if s.IsBaseline || !ok {
			if r.VsBaselinePct != nil || r.VsBaselineCI95 != nil || r.PValue != nil || r.Significant != nil {
				t.Errorf("%s: comparison should be null", key)
			}
			continue
		}
		if r.VsBaselinePct == nil || r.VsBaselineCI95 == nil || r.PValue == nil || r.Significant == nil {
			t.Errorf("%s: comparison missing", key)
			continue
		}
		checkNum(t, key+" vs_baseline_pct", r.VsBaselinePct, c.Pct)
		checkNum(t, key+" vs_baseline_ci95[0]", &r.VsBaselineCI95[0], c.CI95[0])
		checkNum(t, key+" vs_baseline_ci95[1]", &r.VsBaselineCI95[1], c.CI95[1])
		checkNum(t, key+" p_value", r.PValue, c.PValue)
		if want := c.CI95[0] > 0 || c.CI95[1] < 0; *r.Significant != want {
			t.Errorf("%s: significant %v, want %v", key, *r.Significant, want)
		}
	}
	// The n=1 cell has no SD, so sd, rsd and the interval must be null.
	one := byKey["net/throughput/mtu=1500 runtime=kata"]
	if one.N != 1 || one.SD != nil || one.RSDPct != nil || one.CI95[0] != nil || one.CI95[1] != nil {
		t.Errorf("n=1 row: NaN did not become null: %s", mustJSON(t, one))
	}
}

// checkNum compares a decoded number with the stats value; JSON must carry
// null exactly where stats gives NaN, and the shortest float64 text
// round-trips exactly.
func checkNum(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	switch {
	case math.IsNaN(want) && got != nil:
		t.Errorf("%s = %v, want null", name, *got)
	case !math.IsNaN(want) && got == nil:
		t.Errorf("%s = null, want %v", name, want)
	case got != nil && *got != want:
		t.Errorf("%s = %v, want %v", name, *got, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJSONRoundTrip(t *testing.T) {
	rows := analysis.Rows(fixture())
	var buf bytes.Buffer
	if err := JSON(&buf, rows); err != nil {
		t.Fatal(err)
	}
	var back []analysis.Row
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := JSON(&again, back); err != nil {
		t.Fatal(err)
	}
	if buf.String() != again.String() {
		t.Errorf("round trip changed the output")
	}
	if !math.IsNaN(back[8].SD) {
		t.Errorf("null sd decoded as %v, want NaN", back[8].SD)
	}
}

func TestEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "[]\n" {
		t.Errorf("empty JSON = %q, want []", buf.String())
	}
	buf.Reset()
	if err := CSV(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("empty CSV has %d lines, want the header only", n)
	}
	buf.Reset()
	if err := Table(&buf, nil); err != nil || buf.String() != "(no results)\n" {
		t.Errorf("empty table = %q, %v", buf.String(), err)
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"table", "csv", "json"} {
		if f, err := Lookup(name); err != nil || f == nil {
			t.Errorf("Lookup(%q): %v", name, err)
		}
	}
	_, err := Lookup("xml")
	if want := `unknown report format "xml" (allowed: benchfmt, csv, json, markdown, openmetrics, table)`; err == nil || err.Error() != want || !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Lookup(xml) error = %v, want %s", err, want)
	}
}

// A failed trial says what failed it; a trial tried again after the
// platform failed lists every attempt.
func TestFailuresShowsAttempts(t *testing.T) {
	c := result.Cell{ID: 1, Workload: "cpu", Factors: map[string]string{"platform": "docker"}}
	f := analysis.Failures{
		Campaign: result.Campaign{ID: "c1"},
		Trials:   []analysis.Failure{{Seq: 4, Status: result.Failed, FailedBy: result.FailedByWorkload, Cell: c, Error: "residual too large"}},
		Retried: []analysis.Failure{{Seq: 2, Status: result.OK, Cell: c,
			Attempts: []result.Attempt{{Status: result.Failed, FailedBy: result.FailedByPlatform, Error: "Cannot connect to the Docker daemon"}}}},
	}
	var b bytes.Buffer
	if err := Failures(&b, f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"seq  status  failed by  cell                 error",
		"4    failed  workload   cpu platform=docker  residual too large",
		"1 failed trial(s) in campaign c1",
		"1 trial(s) tried again after the platform failed:",
		"2    1        failed  platform   Cannot connect to the Docker daemon",
		"2    2        ok      -          -",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in:\n%s", want, b.String())
		}
	}
}
