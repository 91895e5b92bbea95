package analysis

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// several is a Source over several campaigns in memory that can list
// them, as the store can.
type several map[string]*Memory

func (s several) Campaign(ctx context.Context, id string) (result.Campaign, error) {
	return s[id].Campaign(ctx, id)
}
func (s several) Cells(ctx context.Context, id string) ([]result.Cell, error) {
	return s[id].Cells(ctx, id)
}
func (s several) Trials(ctx context.Context, id string) ([]result.Trial, error) {
	return s[id].Trials(ctx, id)
}
func (s several) Campaigns(context.Context) ([]result.Campaign, error) {
	var out []result.Campaign
	for _, m := range s {
		out = append(out, m.campaign)
	}
	return out, nil
}

// campaignOf is a memory campaign of cells (factor rt) whose trials report
// throughput (higher is better) with the given values per cell ID.
func campaignOf(c result.Campaign, levels map[int]string, values map[int][]float64) *Memory {
	var cells []result.Cell
	var m trialMaker
	var trials []result.Trial
	for id := 1; id <= len(levels); id++ {
		cells = append(cells, cell(id, map[string]string{"rt": levels[id]}))
		for _, v := range values[id] {
			tr := m.ok(id, ob(throughput, v))
			tr.CampaignID = c.ID
			trials = append(trials, tr)
		}
	}
	return NewMemory(c, cells, trials)
}

// Issue 10, item 18: campaign B against A, matched by cell; a change is a
// regression only when the interval excludes 0 and it is at least the
// threshold.
func TestCompareCampaigns(t *testing.T) {
	levels := map[int]string{1: "runc", 2: "crun", 3: "kata", 4: "gvisor"}
	a := campaignOf(result.Campaign{ID: "a"}, levels, map[int][]float64{
		1: {100, 101, 99, 100}, 2: {100, 101, 99, 100}, 3: {100, 101, 99, 100}, 4: {100, 110, 90, 100}})
	b := campaignOf(result.Campaign{ID: "b"}, map[int]string{1: "runc", 2: "crun", 3: "kata", 4: "gvisor", 5: "youki"}, map[int][]float64{
		1: {80, 81, 79, 80},     // 20% worse: regressed
		2: {120, 121, 119, 120}, // 20% better
		3: {99.5, 100.5, 99.6, 99.4} /* -0.35%, real but tiny */, 4: {101, 112, 91, 99}, 5: {1, 2}})
	src := several{"a": a, "b": b}
	cmp, err := CompareCampaigns(context.Background(), src, src, CompareQuery{A: "a", B: "b", Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"runc": Regressed, "crun": Improved, "kata": NoChange, "gvisor": NoChange}
	if len(cmp.Changes) != 4 || cmp.Regressed != 1 || len(cmp.OnlyB) != 1 || cmp.OnlyB[0] != "tcp rt=youki" {
		t.Fatalf("%+v", cmp)
	}
	for _, c := range cmp.Changes {
		if c.Verdict != want[c.Cell["rt"]] {
			t.Errorf("%s: %s (%+.2f%% %v p %.3g), want %s", c.Cell["rt"], c.Verdict, c.Pct, c.CI95, c.PValue, want[c.Cell["rt"]])
		}
	}
	// With a threshold of 25%, the 20% changes are real but within it.
	cmp, _ = CompareCampaigns(context.Background(), src, src, CompareQuery{A: "a", B: "b", Threshold: 25})
	if cmp.Regressed != 0 || cmp.Changes[0].Verdict != WithinThreshold {
		t.Errorf("threshold 25: %+v", cmp.Changes[0])
	}
}

// Issue 10, item 16: a calibration's A/A cells give the noise floor, and
// the experiment's campaigns on the same machine mark differences below
// it.
func TestCalibrationNoiseFloor(t *testing.T) {
	now := time.Unix(1e9, 0)
	calib := result.Campaign{ID: "cal", Name: "exp", Kind: result.KindCalibration, Started: now, Env: map[string]string{"hostname": "h"},
		Baseline: map[string]string{CalibrationFactor: CalibrationA}}
	var cells []result.Cell
	var m trialMaker
	var trials []result.Trial
	for id, level := range map[int]string{1: CalibrationA, 2: CalibrationB} {
		cells = append(cells, cell(id, map[string]string{"rt": "native", CalibrationFactor: level}))
		for _, v := range []float64{100, 104, 96, 102, 98} {
			tr := m.ok(id, ob(throughput, v))
			tr.CampaignID = "cal"
			trials = append(trials, tr)
		}
	}
	exp := campaignOf(result.Campaign{ID: "run", Name: "exp", Started: now.Add(time.Hour), Env: map[string]string{"hostname": "h"},
		Baseline: map[string]string{"rt": "native"}}, map[int]string{1: "native", 2: "docker", 3: "kata"},
		map[int][]float64{1: {100, 101, 99, 100, 100}, 2: {97, 98, 96, 97, 97}, 3: {50, 51, 49, 50, 50}})
	src := several{"cal": NewMemory(calib, cells, trials), "run": exp}

	cal, err := LoadCalibration(context.Background(), src, "cal")
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Floors) != 1 {
		t.Fatalf("%+v", cal)
	}
	f := cal.Floors[0]
	// Both sides are {100, 104, 96, 102, 98}: SD sqrt(10), mean 100.
	if math.Abs(f.RSDPct-math.Sqrt(10)) > 1e-9 || f.N != 5 || f.AAPct != 0 || f.AASignificant ||
		f.FPR < 0 || f.FPR > 0.2 || math.Abs(f.MDEPct-stats.MDE(math.Sqrt(10), 5, 5)) > 1e-12 {
		t.Errorf("%+v", f)
	}
	l, err := Load(context.Background(), src, Query{Campaign: "run"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rows(l.Series) {
		switch r.Cell["rt"] {
		case "docker": // -3%, significant, but under the MDE of ±6.5%
			if r.BelowNoiseFloor == nil || !*r.BelowNoiseFloor || r.Significant == nil || !*r.Significant {
				t.Errorf("docker: %+v", r)
			}
		case "kata": // -50%: far above it
			if r.BelowNoiseFloor == nil || *r.BelowNoiseFloor {
				t.Errorf("kata: %+v", r)
			}
		}
	}
}
