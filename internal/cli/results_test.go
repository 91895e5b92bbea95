package cli

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// A campaign stored before schema 6 recorded no adaptive rule; the reports
// read it from the experiment text the campaign stored. A recorded rule
// wins over the text.
func TestResultsReadsTheRuleOfOldCampaigns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	text := "name: a\nrepetitions: {min: 4, max: 12, rci: 3%, metric: ops_per_s}\nworkloads: [{type: cpu.primes}]\n"
	recorded := &result.Adaptive{Min: 5, Max: 9, RCI: 0.01}
	for _, c := range []result.Campaign{
		{ID: "old", Status: "done", SpecText: text},
		{ID: "new", Status: "done", SpecText: text, Adaptive: recorded},
		{ID: "fixed", Status: "done", SpecText: "name: f\nworkloads: [{type: cpu.primes}]\n"},
	} {
		if err := db.CreateCampaign(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	r, err := openResults(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id, want := range map[string]*result.Adaptive{
		"old":   {Min: 4, Max: 12, RCI: 0.03, Metric: "ops_per_s"},
		"new":   recorded,
		"fixed": nil,
	} {
		c, err := r.Campaign(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Adaptive, want) {
			t.Errorf("campaign %s: adaptive = %+v, want %+v", id, c.Adaptive, want)
		}
	}
}
