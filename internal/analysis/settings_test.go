package analysis

import (
	"context"
	"slices"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// designed is a memory campaign of the given cells (workload tcp unless a
// "workload" key names another), each with three trials of throughput.
func designed(id string, factors ...map[string]string) *Memory {
	var cells []result.Cell
	var m trialMaker
	var trials []result.Trial
	for i, f := range factors {
		c := cell(i+1, map[string]string{})
		for k, v := range f {
			if k == "workload" {
				c.Workload = v
			} else {
				c.Factors[k] = v
			}
		}
		cells = append(cells, c)
		for _, v := range []float64{100, 101, 99} {
			tr := m.ok(c.ID, ob(throughput, v))
			tr.CampaignID = id
			trials = append(trials, tr)
		}
	}
	return NewMemory(result.Campaign{ID: id}, cells, trials)
}

// Issue 39: a factor of one level throughout each campaign's cells of a
// workload (absent throughout counts as one level) whose level differs is
// a setting: the cells are matched on their other factors and the
// difference is listed. A factor with several levels, or in only some of
// the cells, stays part of each cell's identity.
func TestCompareSettings(t *testing.T) {
	type f = map[string]string
	for _, c := range []struct {
		name         string
		a, b         []f
		settings     []SettingDifference
		common       int
		onlyA, onlyB []string
	}{
		{name: "--set factors.cpus=[0.5] in B",
			a:        []f{{"platform": "native"}, {"platform": "docker"}},
			b:        []f{{"platform": "native", "cpus": "0.5"}, {"platform": "docker", "cpus": "0.5"}},
			settings: []SettingDifference{{Factor: "cpus", A: "", B: "0.5", Workloads: []string{"tcp"}}}, common: 2},
		{name: "cpus=1 in A, cpus=0.5 in B",
			a:        []f{{"platform": "native", "cpus": "1"}, {"platform": "docker", "cpus": "1"}},
			b:        []f{{"platform": "native", "cpus": "0.5"}, {"platform": "docker", "cpus": "0.5"}},
			settings: []SettingDifference{{Factor: "cpus", A: "1", B: "0.5", Workloads: []string{"tcp"}}}, common: 2},
		{name: "the same level in both is no difference",
			a:      []f{{"platform": "native", "cpus": "1"}, {"platform": "docker", "cpus": "1"}},
			b:      []f{{"platform": "native", "cpus": "1"}, {"platform": "docker", "cpus": "1"}},
			common: 2},
		{name: "several levels in A are the cells' identity",
			a:     []f{{"platform": "docker", "cpus": "0.5"}, {"platform": "docker", "cpus": "1"}},
			b:     []f{{"platform": "docker"}},
			onlyA: []string{"tcp cpus=0.5 platform=docker", "tcp cpus=1 platform=docker"}, onlyB: []string{"tcp platform=docker"}},
		{name: "a factor of some of A's cells only is their identity",
			a:      []f{{"platform": "native"}, {"platform": "docker", "network": "bridge"}},
			b:      []f{{"platform": "native"}, {"platform": "docker"}},
			common: 1, onlyA: []string{"tcp network=bridge platform=docker"}, onlyB: []string{"tcp platform=docker"}},
		{name: "settings are each workload's",
			a:        []f{{"workload": "cpu", "cpus": "1"}, {"workload": "tcp"}},
			b:        []f{{"workload": "cpu", "cpus": "1"}, {"workload": "tcp", "cpus": "1"}},
			settings: []SettingDifference{{Factor: "cpus", A: "", B: "1", Workloads: []string{"tcp"}}}, common: 2},
	} {
		src := several{"a": designed("a", c.a...), "b": designed("b", c.b...)}
		cmp, err := CompareCampaigns(context.Background(), src, src, CompareQuery{A: "a", B: "b", Threshold: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(cmp.Settings, c.settings, func(x, y SettingDifference) bool {
			return x.Factor == y.Factor && x.A == y.A && x.B == y.B && slices.Equal(x.Workloads, y.Workloads)
		}) {
			t.Errorf("%s: settings %+v, want %+v", c.name, cmp.Settings, c.settings)
		}
		if cmp.Common != c.common || cmp.Judged != c.common || !slices.Equal(cmp.OnlyA, c.onlyA) || !slices.Equal(cmp.OnlyB, c.onlyB) {
			t.Errorf("%s: %d in common, %d judged, only A %q, only B %q; want %d, %d, %q, %q",
				c.name, cmp.Common, cmp.Judged, cmp.OnlyA, cmp.OnlyB, c.common, c.common, c.onlyA, c.onlyB)
		}
		for _, ch := range cmp.Changes {
			if _, ok := ch.Cell["cpus"]; ok && len(c.settings) > 0 && slices.Contains(c.settings[0].Workloads, ch.Workload) {
				t.Errorf("%s: a change's cell keeps the setting: %v", c.name, ch.Cell)
			}
			if ch.Verdict != NoChange {
				t.Errorf("%s: identical values judged %s", c.name, ch.Verdict)
			}
		}
	}
}

// What each campaign ran, for a comparison with no cell in common: per
// workload its cells and each factor's levels, in the cells' order.
func TestCompareDesigns(t *testing.T) {
	type f = map[string]string
	a := designed("a", f{"platform": "docker", "cpus": "0.5"}, f{"platform": "native", "cpus": "0.5"}, f{"platform": "docker", "cpus": "1"}, f{"workload": "cpu"})
	src := several{"a": a, "b": designed("b", f{"platform": "docker"})}
	cmp, err := CompareCampaigns(context.Background(), src, src, CompareQuery{A: "a", B: "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := []WorkloadDesign{
		{Workload: "tcp", Cells: 3, Factors: []FactorLevels{{"platform", []string{"docker", "native"}}, {"cpus", []string{"0.5", "1"}}}},
		{Workload: "cpu", Cells: 1},
	}
	same := func(x, y WorkloadDesign) bool {
		return x.Workload == y.Workload && x.Cells == y.Cells && slices.EqualFunc(x.Factors, y.Factors, func(p, q FactorLevels) bool {
			return p.Factor == q.Factor && slices.Equal(p.Levels, q.Levels)
		})
	}
	if !slices.EqualFunc(cmp.DesignA, want, same) || len(cmp.DesignB) != 1 || cmp.DesignB[0].Cells != 1 || cmp.Common != 0 || cmp.Judged != 0 {
		t.Errorf("designs %+v and %+v, %d in common, %d judged", cmp.DesignA, cmp.DesignB, cmp.Common, cmp.Judged)
	}
}
