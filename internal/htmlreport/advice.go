package htmlreport

import (
	"errors"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/advice"
	"github.com/ctrbench/ctrbench/internal/analysis"
)

// AdviceOptions is the tolerance and services of a co-location campaign's
// placement advice.
type AdviceOptions struct {
	MaxSlowdown float64 // a fraction; 0 for DefaultMaxSlowdown
	Services    []advice.Service
}

// DefaultMaxSlowdown is the report's tolerance unless told otherwise.
const DefaultMaxSlowdown = 0.10

// AdviceView is the advice as the page shows it.
type AdviceView struct {
	Header  []string
	Kinds   []string
	Grid    [][]AdviceCell // [row kind][column kind]
	Why     []advice.Pair
	Packing *advice.Packing
}

// AdviceCell is one pair of kinds' level.
type AdviceCell struct {
	Level string
	Why   string
}

// adviceView computes the advice of a co-location campaign; ok is false for
// any other campaign.
func adviceView(campaign string, rows []analysis.Row, o AdviceOptions) (AdviceView, bool, error) {
	if o.MaxSlowdown == 0 {
		o.MaxSlowdown = DefaultMaxSlowdown
	}
	a, err := advice.Advise(campaign, rows, advice.Options{MaxSlowdown: o.MaxSlowdown, Services: o.Services})
	if errors.Is(err, advice.ErrNotColocation) {
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
