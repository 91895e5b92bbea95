package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

func TestInterferenceRows(t *testing.T) {
	alone := []float64{100, 101, 99, 100, 100}
	series := []analysis.Series{
		{Identity: analysis.Identity{Campaign: "c", Workload: "L", ID: measure("gflops"), Unit: "GFLOPS", Better: result.Higher, CellID: 1,
			Cell: map[string]string{"neighbour": "none"}}, Values: alone, IsBaseline: true},
		{Identity: analysis.Identity{Campaign: "c", Workload: "L", ID: measure("gflops"), Unit: "GFLOPS", Better: result.Higher, CellID: 2,
			Cell: map[string]string{"neighbour": "L", "packaging": "same-container"}}, Values: []float64{50, 51, 49, 50, 50},
			Baseline: alone, Interference: true},
		{Identity: analysis.Identity{Campaign: "c", Workload: "L", ID: measure("seconds"), Unit: "s", Better: result.Lower, CellID: 2,
			Cell: map[string]string{"neighbour": "L", "packaging": "same-container"}}, Values: []float64{2, 2.02, 1.98, 2, 2},
			Baseline: []float64{1, 1.01, 0.99, 1, 1}, Interference: true},
	}
	rows := analysis.Rows(series)
	if rows[0].IR != nil {
		t.Error("the baseline has no IR")
	}
	if rows[1].IR == nil || math.Abs(*rows[1].IR-(-0.5)) > 1e-9 || !*rows[1].IRExcludes0 {
		t.Fatalf("throughput halved: IR %v", rows[1].IR)
	}
	// Time doubled is as bad: the sign is flipped for lower-is-better.
	if rows[2].IR == nil || math.Abs(*rows[2].IR-(-1)) > 1e-9 {
		t.Fatalf("seconds doubled: IR %v", rows[2].IR)
	}
	var b bytes.Buffer
	if err := Table(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "IR [95% CI]") || !strings.Contains(b.String(), "-0.500 [") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := JSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"ir": -0.5`) || !strings.Contains(b.String(), `"ir_excludes_0": true`) {
		t.Errorf("json:\n%s", b.String())
	}
}

func TestMatrix(t *testing.T) {
	alone := []float64{100, 101, 99, 100, 100}
	mk := func(w, ant, pack string, vals []float64, base bool) analysis.Series {
		cell := map[string]string{"neighbour": ant, "cpus": "1"}
		if pack != "" {
			cell["packaging"] = pack
		}
		s := analysis.Series{Identity: analysis.Identity{Campaign: "c", Workload: w, ID: measure("rate"), Unit: "x/s", Better: result.Higher, Cell: cell}, Values: vals, IsBaseline: base}
		if !base {
			s.Baseline, s.Interference = alone, true
		}
		return s
	}
	rows := analysis.Rows([]analysis.Series{
		mk("L", "none", "", alone, true),
		mk("L", "L", "same-container", []float64{50, 51, 49, 50, 50}, false),
		mk("L", "S", "same-container", []float64{90, 91, 89, 90, 90}, false),
		mk("L", "L", "separate-containers", []float64{75, 76, 74, 75, 75}, false),
	})
	var b bytes.Buffer
	if err := Matrix(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Interference ratio — cpus=1 packaging=same-container",
		"Interference ratio — cpus=1 packaging=separate-containers",
		"target  L", "L rate  -0.500 [", "-0.100 [", "-0.250 [",
		"Mean [SD] — cpus=1 packaging=same-container", "alone (baseline)", "100.0 [0.7071] n=5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix lacks %q:\n%s", want, out)
		}
	}
}

// A target's headline is its first metric that is neither telemetry (its
// own, a pair's or a neighbour's) nor a neighbour's measure, whatever the
// rows' order.
func TestMatrixHeadlineByIdentity(t *testing.T) {
	alone := []float64{100, 101, 99}
	mk := func(id result.MetricID, ant string, cellID int, vals []float64) analysis.Series {
		s := analysis.Series{Identity: analysis.Identity{Campaign: "c", Workload: "L", ID: id, Better: result.Higher, CellID: cellID,
			Cell: map[string]string{"neighbour": ant}}, Values: vals, IsBaseline: ant == "none"}
		if ant != "none" {
			s.Baseline, s.Interference = alone, true
		}
		return s
	}
	neighbourCPU := result.MetricID{Metric: "cpu_seconds", Scope: result.ScopeNeighbour, Kind: result.KindTelemetry, Index: 1}
	overlap := result.MetricID{Metric: "overlap_pct", Scope: result.ScopeNeighbour, Kind: result.KindMeasure}
	cpu := result.MetricID{Metric: "cpu_seconds", Scope: result.ScopeTrial, Kind: result.KindTelemetry, Role: "server"}
	rows := analysis.Rows([]analysis.Series{
		mk(neighbourCPU, "S", 2, []float64{1, 1, 1}),
		mk(overlap, "S", 2, []float64{99, 98, 99}),
		mk(cpu, "none", 1, []float64{1, 1, 1}),
		mk(measure("rate"), "none", 1, alone),
		mk(measure("rate"), "S", 2, []float64{50, 51, 49}),
	})
	var b bytes.Buffer
	if err := Matrix(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"L rate  -0.500 [", "L rate  100.0 [1.000] n=3  50.00 [1.000] n=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cpu_seconds") || strings.Contains(out, "overlap") {
		t.Errorf("matrix headline is telemetry or a neighbour's:\n%s", out)
	}
}

// Issue 10, item 1: the alone column was keyed by target only, so with a
// cpus factor beside neighbour every case showed the last case's
// baseline (the cpus=1 case showed 200 where its own was 100; its IR used
// the right one). Each case shows its own.
func TestMatrixAloneIsTheCasesOwn(t *testing.T) {
	mk := func(cpus, ant string, vals, base []float64) analysis.Series {
		cell := map[string]string{"neighbour": ant, "cpus": cpus}
		s := analysis.Series{Identity: analysis.Identity{Campaign: "c", Workload: "L", ID: measure("rate"), Unit: "x/s", Better: result.Higher, Cell: cell}, Values: vals}
		if base == nil {
			s.IsBaseline = true
		} else {
			cell["packaging"] = "same-container"
			s.Baseline, s.Interference = base, true
		}
		return s
	}
	one, two := []float64{100, 101, 99}, []float64{200, 202, 198}
	rows := analysis.Rows([]analysis.Series{
		mk("1", "none", one, nil),
		mk("1", "L", []float64{50, 51, 49}, one),
		mk("2", "none", two, nil),
		mk("2", "L", []float64{100, 101, 99}, two),
	})
	var b bytes.Buffer
	if err := Matrix(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, c := range []struct{ heading, alone string }{
		{"Mean [SD] — cpus=1 packaging=same-container", "L rate  100.0 [1.000] n=3"},
		{"Mean [SD] — cpus=2 packaging=same-container", "L rate  200.0 [2.000] n=3"},
	} {
		i := strings.Index(out, c.heading)
		if i < 0 || !strings.Contains(out[i:min(len(out), i+len(c.heading)+200)], c.alone) {
			t.Errorf("under %q want %q:\n%s", c.heading, c.alone, out)
		}
	}
}
