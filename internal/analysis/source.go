// Package analysis turns a campaign's record into what every report shows:
// its trials grouped into series per cell and metric (by identity, never by
// name), each cell's baseline resolved, metrics in the order the workload
// declares them, and one row of statistics per series. Formats (table, CSV,
// JSON, the matrix) only render these rows, so they agree; a caller that
// holds trials in memory (bench) groups them the same way through Memory.
//
// It reads through Source and never acts: it imports no package that
// stores, runs or talks to a platform.
package analysis

import (
	"context"
	"fmt"
	"slices"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Source is where a campaign's record comes from: *store.DB, or Memory.
// Its errors already say what was being read, so analysis passes them on
// as they are.
type Source interface {
	// Campaign returns the campaign with this ID (a store also takes a
	// unique prefix).
	Campaign(ctx context.Context, id string) (result.Campaign, error)
	// Cells returns the campaign's cells ordered by ID.
	Cells(ctx context.Context, campaignID string) ([]result.Cell, error)
	// Trials returns the campaign's trials ordered by Seq, each with its
	// observations in the order they were recorded.
	Trials(ctx context.Context, campaignID string) ([]result.Trial, error)
}

// Memory is a Source over one campaign held in memory, for a caller that
// ran trials without storing them.
type Memory struct {
	campaign result.Campaign
	cells    []result.Cell
	trials   []result.Trial
}

// NewMemory holds campaign c with its cells and trials, ordered as a
// store returns them (cells by ID, trials by Seq) whatever order they
// came in.
func NewMemory(c result.Campaign, cells []result.Cell, trials []result.Trial) *Memory {
	cells = slices.Clone(cells)
	slices.SortStableFunc(cells, func(a, b result.Cell) int { return a.ID - b.ID })
	trials = slices.Clone(trials)
	slices.SortStableFunc(trials, func(a, b result.Trial) int { return a.Seq - b.Seq })
	return &Memory{campaign: c, cells: cells, trials: trials}
}

// Campaign returns the campaign it holds, if id is its ID.
func (m *Memory) Campaign(_ context.Context, id string) (result.Campaign, error) {
	if id != m.campaign.ID {
		return result.Campaign{}, fmt.Errorf("campaign %q: not in memory (it holds %q)", id, m.campaign.ID)
	}
	return m.campaign, nil
}

// Cells returns the cells of the campaign it holds; none of another.
func (m *Memory) Cells(_ context.Context, campaignID string) ([]result.Cell, error) {
	if campaignID != m.campaign.ID {
		return nil, nil
	}
	return m.cells, nil
}

// Trials returns the trials of the campaign it holds; none of another.
func (m *Memory) Trials(_ context.Context, campaignID string) ([]result.Trial, error) {
	if campaignID != m.campaign.ID {
		return nil, nil
	}
	return m.trials, nil
}
