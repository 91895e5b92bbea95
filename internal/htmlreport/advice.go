package htmlreport

import (
	"errors"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/placement"
)

// AdviceOptions is the tolerance and services of a co-location campaign's
// placement advice.
type AdviceOptions struct {
	MaxSlowdown float64 // a fraction; 0 for DefaultMaxSlowdown
	Services    []placement.Service
}

// DefaultMaxSlowdown is the report's tolerance unless told otherwise.
const DefaultMaxSlowdown = 0.10

// AdviceView is the advice as the page shows it.
type AdviceView struct {
	Header  []string
	Kinds   []string
	Grid    [][]AdviceCell // [row kind][column kind]
	Why     []placement.Pair
	Packing *placement.Packing
}

// AdviceCell is one pair of kinds' level.
type AdviceCell struct {
	Level string
	Why   string
}

// advice computes the advice of a co-location campaign; ok is false for
// any other campaign.
func advice(campaign string, rows []analysis.Row, o AdviceOptions) (AdviceView, bool, error) {
	if o.MaxSlowdown == 0 {
		o.MaxSlowdown = DefaultMaxSlowdown
	}
	a, err := placement.Advise(campaign, rows, placement.Options{MaxSlowdown: o.MaxSlowdown, Services: o.Services})
	if errors.Is(err, placement.ErrNotColocation) {
		return AdviceView{}, false, nil
	}
	if err != nil {
		return AdviceView{}, false, fmt.Errorf("placement advice: %w", err)
	}
	v := AdviceView{Header: a.Header(), Kinds: a.Kinds, Why: a.Pairs, Packing: a.Packing}
	for _, x := range a.Kinds {
		var line []AdviceCell
		for _, y := range a.Kinds {
			p, _ := a.Level(x, y)
			line = append(line, AdviceCell{Level: string(p.Level), Why: p.Why})
		}
		v.Grid = append(v.Grid, line)
	}
	return v, true, nil
}
