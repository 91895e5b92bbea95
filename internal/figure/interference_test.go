package figure

import (
	"reflect"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	_ "github.com/ctrbench/ctrbench/internal/workloads" // the types' matrix metrics
)

// S0's L (cpu.linpack, one matrix metric) and S (mem.stream, four) beside
// S in one container: the first heatmap holds both headlines, the next
// three S's other kernels; every title names its rows' metrics, every id
// is its own, the first keeps the case's.
func TestInterferenceMatrixPerKernel(t *testing.T) {
	alone := map[string]string{"neighbour": "none", "packaging": "same-container"}
	beside := map[string]string{"neighbour": "S", "packaging": "same-container"}
	var rows []analysis.Row
	add := func(w, typ, metric string, ir float64) {
		a := row(w, metric, 1, alone, 10)
		a.WorkloadType, a.Baseline = typ, true
		b := row(w, metric, 2, beside, 10*(1+ir))
		b.WorkloadType, b.IR = typ, &ir
		rows = append(rows, a, b)
	}
	add("L", "cpu.linpack", "gflops", -0.1)
	add("L", "cpu.linpack", "seconds", -0.1)
	for i, k := range []string{"copy", "scale", "add", "triad", "array_size"} {
		add("S", "mem.stream", k, -0.1*float64(i))
	}
	secs := Build(rows, nil)
	if secs[0].ID != "interference" {
		t.Fatalf("first section %s: want the interference matrices", secs[0].ID)
	}
	var titles, ids []string
	var heads [][]string
	for _, f := range secs[0].Figures {
		titles, ids, heads = append(titles, f.Title), append(ids, f.ID), append(heads, f.Heat.Rows)
	}
	ck := "Interference ratio — packaging=same-container — "
	wantTitles := []string{ck + "L gflops, S copy", ck + "S scale", ck + "S add", ck + "S triad"}
	wantIDs := []string{"ir-packaging-same-container", "ir-packaging-same-container-s-scale",
		"ir-packaging-same-container-s-add", "ir-packaging-same-container-s-triad"}
	wantRows := [][]string{{"L gflops", "S copy"}, {"S scale"}, {"S add"}, {"S triad"}}
	if !reflect.DeepEqual(titles, wantTitles) || !reflect.DeepEqual(ids, wantIDs) || !reflect.DeepEqual(heads, wantRows) {
		t.Errorf("heatmaps\n titles %q\n ids %q\n rows %q\nwant\n %q\n %q\n %q", titles, ids, heads, wantTitles, wantIDs, wantRows)
	}
	if c := secs[0].Figures[3].Heat.Cells[0][0]; c == nil || c.Text != "-0.300" {
		t.Errorf("triad's entry %+v: want -0.300", c)
	}
}
