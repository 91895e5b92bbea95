package analysis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Six runs of one experiment in two stores: runc steady, crun 40% slower
// from the fifth run on, whose file and kernel changed; a calibration, an
// interrupted run and another experiment are left out.
func TestLoadHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 9))
	levels := map[int]string{1: "runc", 2: "crun"}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a, b := several{}, several{}
	for i := range 6 {
		vals := map[int][]float64{}
		for id := 1; id <= 2; id++ {
			mean := 100.0
			if id == 2 && i >= 4 {
				mean = 60
			}
			for range 4 {
				vals[id] = append(vals[id], mean*(1+0.01*rng.NormFloat64()))
			}
		}
		c := result.Campaign{ID: "run" + strconv.Itoa(i), Name: "exp", Status: result.CampaignDone, Started: t0.Add(time.Duration(i) * time.Hour),
			SpecText: "name: exp\n", Env: map[string]string{result.EnvKernel: "6.1"}}
		if i >= 4 {
			c.SpecText += "# --set machine.cpus=1\n"
		}
		if i >= 4 {
			c.Env[result.EnvKernel] = "6.2"
		}
		dst := a
		if i%2 == 1 {
			dst = b
		}
		dst[c.ID] = campaignOf(c, levels, vals)
	}
	a["cal"] = campaignOf(result.Campaign{ID: "cal", Name: "exp", Kind: result.KindCalibration, Status: result.CampaignDone}, levels, map[int][]float64{1: {1, 2}})
	a["int"] = campaignOf(result.Campaign{ID: "int", Name: "exp", Status: result.CampaignInterrupted}, levels, map[int][]float64{1: {1, 2}})
	b["other"] = campaignOf(result.Campaign{ID: "other", Name: "x", Status: result.CampaignDone}, levels, map[int][]float64{1: {1, 2}})

	h, err := LoadHistory(context.Background(), []Store{a, b}, HistoryQuery{Name: "exp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 6 || len(h.Series) != 2 || len(h.Skipped) != 1 {
		t.Fatalf("runs %d, series %d, skipped %v", len(h.Runs), len(h.Series), h.Skipped)
	}
	for i, r := range h.Runs {
		if r.Campaign.ID != "run"+strconv.Itoa(i) || r.Source != i%2 {
			t.Errorf("run %d is %s from source %d", i, r.Campaign.ID, r.Source)
		}
	}
	if got := h.ChangedRuns(); len(got) != 1 || got[0] != 4 {
		t.Fatalf("changed runs %v, want [4]", got)
	}
	crun := h.Series[1]
	if crun.Cell["rt"] != "crun" || len(crun.Changepoints) != 1 || crun.Changepoints[0].Verdict != Regressed || crun.Changepoints[0].Pct > -35 {
		t.Errorf("crun: %+v", crun.Changepoints)
	}
	if len(h.Series[0].Changepoints) != 0 {
		t.Errorf("runc: %+v", h.Series[0].Changepoints)
	}
	ch := h.Runs[4].Changes
	if len(ch) != 2 || ch[0].Key != SpecKey || ch[1].Key != result.EnvKernel || ch[1].A != "6.1" || ch[1].B != "6.2" {
		t.Errorf("changes at run 5: %+v", ch)
	}
	if len(h.Runs[5].Changes) != 0 || h.PerSeries != 0.025 {
		t.Errorf("run 6 changes %+v, per series %v", h.Runs[5].Changes, h.PerSeries)
	}
	until, err := LoadHistory(context.Background(), []Store{a, b}, HistoryQuery{Name: "exp", Until: "run3"})
	if err != nil || len(until.Runs) != 4 || len(until.ChangedRuns()) != 0 {
		t.Errorf("until run3: %d runs, changed %v, %v", len(until.Runs), until.ChangedRuns(), err)
	}
	// The last 3 runs up to run 5: runs 2 to 4, the change at run 4 still
	// against run 3, the 2 before counted.
	last, err := LoadHistory(context.Background(), []Store{a, b}, HistoryQuery{Name: "exp", Until: "run4", Last: 3})
	if err != nil || len(last.Runs) != 3 || last.Earlier != 2 || last.Runs[0].Campaign.ID != "run2" || len(last.Runs[2].Changes) != 2 {
		t.Errorf("the last 3 up to run4: %d runs from %v, %d earlier, %v", len(last.Runs), last.Runs, last.Earlier, err)
	}
	if all, _ := LoadHistory(context.Background(), []Store{a, b}, HistoryQuery{Name: "exp", Last: 10}); len(all.Runs) != 6 || all.Earlier != 0 {
		t.Errorf("the last 10 of 6: %d runs, %d earlier", len(all.Runs), all.Earlier)
	}
	// A prefix of several runs is refused, naming them, not read as the
	// last of them.
	if _, err := LoadHistory(context.Background(), []Store{a, b}, HistoryQuery{Name: "exp", Until: "run"}); err == nil || !strings.Contains(err.Error(), "ambiguous prefix") || !strings.Contains(err.Error(), "run0") {
		t.Errorf("until run (every run's prefix): %v", err)
	}
	if _, err := LoadHistory(context.Background(), []Store{a, b}, HistoryQuery{Name: "exp", Until: "zz"}); err == nil || !strings.Contains(err.Error(), "no finished campaign") {
		t.Errorf("until zz: %v", err)
	}
	if _, err := LoadHistory(context.Background(), []Store{a}, HistoryQuery{Name: "nope"}); err == nil {
		t.Error("an experiment without campaigns: no error")
	}
}
