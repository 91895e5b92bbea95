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
	// FailedBy is the workload or the platform ("" for a trial that
	// ended ok after retries).
	FailedBy string
	// Attempts are earlier tries the platform failed.
	Attempts []result.Attempt
}

// Failures is a campaign's failed and timed-out trials in run order, and
// the trials that were tried again after a platform failure.
type Failures struct {
	Campaign result.Campaign
	Trials   []Failure
	Retried  []Failure
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
		x := Failure{Seq: t.Seq, Warmup: t.Warmup, Status: t.Status, Cell: byID[t.CellID], Error: t.Error, FailedBy: t.FailedBy, Attempts: t.Attempts}
		if len(t.Attempts) > 0 {
			f.Retried = append(f.Retried, x)
		}
		if t.Status != result.OK {
			f.Trials = append(f.Trials, x)
		}
	}
	return f, nil
}
