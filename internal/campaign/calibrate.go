package campaign

import (
	"context"
	"fmt"
	"maps"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
)

// DefaultCalibrationRepetitions is the fewest trials per side a
// calibration runs when the caller names no number.
const DefaultCalibrationRepetitions = 5

// CalibrationBlocks is how many pairs of consecutive blocks of the
// experiment's n trials a calibration runs by default: its false-positive
// rate is measured on that many comparisons (analysis.Floor.FalsePositives).
const CalibrationBlocks = 5

// Calibrate runs the A/A calibration of an experiment: each workload's
// baseline cell (its first cell when the file names no baseline) as two
// identical cells, A and B, reps trials each (0: CalibrationBlocks times
// the file's repetitions, at least 5), interleaved like any campaign. It is stored as a campaign
// of kind calibration under the experiment's name; its noise floor is
// analysis.LoadCalibration's, and reports of the experiment's campaigns
// on this machine warn of differences below it.
func Calibrate(ctx context.Context, db *store.DB, o Options, reps int) (Outcome, error) {
	e := o.Experiment
	if reps == 0 {
		reps = max(CalibrationBlocks*max(e.Repetitions, 2), DefaultCalibrationRepetitions)
	}
	// The repetitions go in the stored text, so a resumed calibration
	// plans the same trials.
	aa, err := spec.Reload(e.Path, fmt.Sprintf("%s\n# --set repetitions=%d", e.Text, reps), e.Seed, o.Machine)
	if err != nil {
		return Outcome{}, err
	}
	o.Experiment = aa
	o.Cells = CalibrationCells(aa)
	o.Kind = result.KindCalibration
	o.Baseline = map[string]string{analysis.CalibrationFactor: analysis.CalibrationA}
	return Run(ctx, db, o)
}

// CalibrationCells are the A/A cells of an experiment: each workload's
// baseline cell, or first cell, twice, the calibration factor telling the
// two apart.
func CalibrationCells(e *spec.Experiment) []result.Cell {
	cells := e.Cells()
	chosen := map[string]bool{}
	var out []result.Cell
	pick := func(c result.Cell) {
		chosen[c.Workload] = true
		for _, level := range []string{analysis.CalibrationA, analysis.CalibrationB} {
			cc := c
			cc.Factors = maps.Clone(c.Factors)
			cc.Factors[analysis.CalibrationFactor] = level
			cc.ID = len(out) + 1
			out = append(out, cc)
		}
	}
	for _, c := range cells {
		if id, ok := e.BaselineOf(c, cells); ok && id == c.ID && !chosen[c.Workload] {
			pick(c)
		}
	}
	for _, c := range cells {
		if !chosen[c.Workload] {
			pick(c)
		}
	}
	return out
}
