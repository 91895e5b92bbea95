package analysis

import (
	"context"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Memory answers like a store: cells by ID, trials by Seq, nothing for
// another campaign, an error for a campaign it does not hold. It keeps
// its own copies, so the caller's slices stay as they were.
func TestMemorySource(t *testing.T) {
	ctx := context.Background()
	cells := []result.Cell{cell(2, nil), cell(1, nil)}
	trials := []result.Trial{{Seq: 3}, {Seq: 1}, {Seq: 2}}
	m := NewMemory(result.Campaign{ID: "c", Name: "mem"}, cells, trials)

	if c, err := m.Campaign(ctx, "c"); err != nil || c.Name != "mem" {
		t.Errorf("Campaign(c) = %+v, %v", c, err)
	}
	if _, err := m.Campaign(ctx, "other"); err == nil {
		t.Error("Campaign(other) found something")
	}
	gotCells, err := m.Cells(ctx, "c")
	if err != nil || len(gotCells) != 2 || gotCells[0].ID != 1 || gotCells[1].ID != 2 {
		t.Errorf("Cells = %+v, %v", gotCells, err)
	}
	gotTrials, err := m.Trials(ctx, "c")
	if err != nil || len(gotTrials) != 3 || gotTrials[0].Seq != 1 || gotTrials[2].Seq != 3 {
		t.Errorf("Trials = %+v, %v", gotTrials, err)
	}
	if cells[0].ID != 2 || trials[0].Seq != 3 {
		t.Error("NewMemory reordered the caller's slices")
	}
	if c, _ := m.Cells(ctx, "other"); c != nil {
		t.Errorf("Cells(other) = %v", c)
	}
	if tr, _ := m.Trials(ctx, "other"); tr != nil {
		t.Errorf("Trials(other) = %v", tr)
	}
	if _, err := Load(ctx, m, Query{Campaign: "other"}); err == nil {
		t.Error("Load(other) succeeded")
	}
}

// Failures are every trial that did not end ok, warm-ups included, in run
// order with their cells.
func TestLoadFailures(t *testing.T) {
	var m trialMaker
	cells := []result.Cell{cell(1, map[string]string{"platform": "native"}), cell(2, map[string]string{"platform": "docker"})}
	warm := m.failed(2, "image missing")
	warm.Warmup = true
	timeout := m.failed(1, "deadline")
	timeout.Status = result.Timeout
	trials := []result.Trial{m.ok(1, ob(throughput, 1)), timeout, warm, m.failed(7, "gone")}
	f, err := LoadFailures(context.Background(), NewMemory(result.Campaign{ID: "c"}, cells, trials), "c")
	if err != nil {
		t.Fatal(err)
	}
	if f.Campaign.ID != "c" || len(f.Trials) != 3 {
		t.Fatalf("failures %+v", f)
	}
	want := []Failure{
		{Seq: 1, Warmup: true, Status: result.Failed, Cell: cells[1], Error: "image missing"},
		{Seq: 2, Status: result.Timeout, Cell: cells[0], Error: "deadline"},
		{Seq: 4, Status: result.Failed, Error: "gone"}, // a cell the campaign does not list
	}
	for i, w := range want {
		g := f.Trials[i]
		if g.Seq != w.Seq || g.Warmup != w.Warmup || g.Status != w.Status || g.Cell.Key() != w.Cell.Key() || g.Error != w.Error {
			t.Errorf("failure %d = %+v, want %+v", i, g, w)
		}
	}
}
