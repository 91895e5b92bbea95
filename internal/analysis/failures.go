package analysis

import (
	"context"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Failure is a trial that did not end ok: which, where, and why.
type Failure struct {
	Seq    int
	Warmup bool
	Status result.Status // failed or timeout
	Cell   result.Cell   // the zero Cell if the campaign does not list it
	Error  string
}

// Failures is a campaign's failed and timed-out trials in run order.
type Failures struct {
	Campaign result.Campaign
	Trials   []Failure
}

// LoadFailures reads a campaign's trials from src and keeps those that did
// not end ok, warm-ups included: a warm-up that fails says as much about
// the setup as any other trial.
func LoadFailures(ctx context.Context, src Source, campaign string) (Failures, error) {
	camp, err := src.Campaign(ctx, campaign)
	if err != nil {
		return Failures{}, err
	}
	cells, err := src.Cells(ctx, camp.ID)
	if err != nil {
		return Failures{}, err
	}
	byID := map[int]result.Cell{}
	for _, c := range cells {
		byID[c.ID] = c
	}
	trials, err := src.Trials(ctx, camp.ID)
	if err != nil {
		return Failures{}, err
	}
	f := Failures{Campaign: camp}
	for _, t := range trials {
		if t.Status == result.OK {
			continue
		}
		f.Trials = append(f.Trials, Failure{Seq: t.Seq, Warmup: t.Warmup, Status: t.Status, Cell: byID[t.CellID], Error: t.Error})
	}
	return f, nil
}
