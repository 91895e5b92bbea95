package analysis

import (
	"reflect"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// rowsOf loads a campaign of cells, baseline {rt: native}, whose trials
// report throughput values per cell, and returns the throughput rows by
// cell ID.
func rowsOf(t *testing.T, values map[int][]float64) map[int]Row {
	t.Helper()
	cells := []result.Cell{cell(1, map[string]string{"rt": "native"}), cell(2, map[string]string{"rt": "docker"})}
	var m trialMaker
	var trials []result.Trial
	for id := 1; id <= 2; id++ {
		for _, v := range values[id] {
			trials = append(trials, m.ok(id, ob(throughput, v)))
		}
	}
	src := NewMemory(result.Campaign{ID: "c", Baseline: map[string]string{"rt": "native"}}, cells, trials)
	out := map[int]Row{}
	for _, r := range Rows(load(t, src).Series) {
		if r.ID == throughput {
			out[map[string]int{"native": 1, "docker": 2}[r.Cell["rt"]]] = r
		}
	}
	return out
}

// Issue 10, item 4: two cells without variance (a count, a quantized
// timer) were reported with a zero-width interval, p = 0 and a star at
// n = 2. The difference is a fact; a verdict on it is not.
func TestRowNoVarianceClaimsNothing(t *testing.T) {
	r := rowsOf(t, map[int][]float64{1: {2, 2}, 2: {3, 3}})[2]
	if r.VsBaselinePct == nil || *r.VsBaselinePct != 50 {
		t.Fatalf("the difference itself: %+v", r.VsBaselinePct)
	}
	if r.Significant != nil || r.PValue != nil || r.VsBaselineCI95 != nil || r.VsBaselineNote != "no variance: interval undefined" {
		t.Errorf("significant %v, p %v, interval %v, note %q: want none and the reason", r.Significant, r.PValue, r.VsBaselineCI95, r.VsBaselineNote)
	}
}

// Issue 10, item 6: a baseline of 0 (0 → 5% loss) gave "-" and no reason.
func TestRowZeroBaselineGivesTheDifference(t *testing.T) {
	r := rowsOf(t, map[int][]float64{1: {0, 0, 0}, 2: {4, 5, 6}})[2]
	if r.VsBaselinePct != nil || r.VsBaselineDiff == nil || *r.VsBaselineDiff != 5 || r.VsBaselineDiffCI95 == nil ||
		r.Significant == nil || !*r.Significant || r.VsBaselineNote == "" {
		t.Errorf("%+v", r)
	}
}

// Issue 10, item 5: the star and the p-value come from one statistic. The
// first pair of samples is one where they disagreed before: the log-ratio
// interval [+0.087, +20.27]% excluded 0 while Welch's p on the difference
// was 0.054.
func TestRowOneVerdict(t *testing.T) {
	for _, vs := range []map[int][]float64{
		{1: {9.94, 9.68, 10.33}, 2: {10.39, 11.25, 11.22}},
		{1: {10.04, 9.45, 8.57}, 2: {11.21, 11.11, 10.78}},
		{1: {100, 140, 90, 110}, 2: {150, 190, 160, 200}},
		{1: {5, 5.1}, 2: {5.4, 5.2}},
	} {
		r := rowsOf(t, vs)[2]
		if r.Significant == nil || r.PValue == nil || r.VsBaselineCI95 == nil {
			t.Fatalf("%v: %+v", vs, r)
		}
		excludes := r.VsBaselineCI95[0] > 0 || r.VsBaselineCI95[1] < 0
		if *r.Significant != excludes || *r.Significant != (*r.PValue < 0.05) {
			t.Errorf("%v: significant %v, interval %v, p %v", vs, *r.Significant, *r.VsBaselineCI95, *r.PValue)
		}
	}
}

// Issue 10, item 17: outliers are flagged with their trials, never
// dropped: the statistics still include them.
func TestRowFlagsOutliers(t *testing.T) {
	rows := rowsOf(t, map[int][]float64{1: {10, 11, 9, 10.5, 9.5, 30}, 2: {10, 10, 10, 10, 10, 10}})
	if r := rows[1]; !reflect.DeepEqual(r.Outliers, []int{6}) || r.N != 6 || r.Mean <= 11 {
		t.Errorf("outliers %v, n %d, mean %v: want trial 6 flagged and kept", r.Outliers, r.N, r.Mean)
	}
	if len(rows[2].Outliers) != 0 {
		t.Errorf("no spread, no outliers: %v", rows[2].Outliers)
	}
}
