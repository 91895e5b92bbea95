package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

func TestCellsRoundTrip(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	if err := d.CreateCampaign(ctx, sampleCampaign("c", base)); err != nil {
		t.Fatal(err)
	}
	cells := sampleCells()
	cells = append(cells, result.Cell{ID: 3, Workload: "nil maps"})
	// Insert out of order: Cells must return them by ID.
	shuffled := []result.Cell{cells[2], cells[0], cells[1]}
	if err := d.AddCells(ctx, "c", shuffled); err != nil {
		t.Fatal(err)
	}
	got, err := d.Cells(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cells) {
		t.Errorf("Cells = %#v\nwant %#v", got, cells)
	}
	if got, err := d.Cells(ctx, "other"); err != nil || len(got) != 0 {
		t.Errorf("Cells(other) = %v, %v; want none", got, err)
	}
}

func TestAddCellsAtomic(t *testing.T) {
	tests := []struct {
		name     string
		campaign string
		cells    []result.Cell
	}{
		{"duplicate ID in batch", "c", []result.Cell{{ID: 1}, {ID: 2}, {ID: 1}}},
		{"unknown campaign", "missing", []result.Cell{{ID: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t)
			ctx := context.Background()
			if err := d.CreateCampaign(ctx, sampleCampaign("c", base)); err != nil {
				t.Fatal(err)
			}
			if err := d.AddCells(ctx, tt.campaign, tt.cells); err == nil {
				t.Fatal("AddCells succeeded, want error")
			}
			if n := count(t, d, "cells"); n != 0 {
				t.Errorf("%d cells stored after failed AddCells, want 0", n)
			}
		})
	}
}
