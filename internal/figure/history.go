package figure

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// History is the section of an experiment's history: one line chart per
// workload's headline metric, a line per cell over the runs (x: the run's
// number), its 95% interval as a band, and each run where a changepoint
// was found in the figure's series as a vertical mark. cellIDs maps a
// cell (result.FactorString of its levels, by workload) to its ID in the
// campaign the report is of, so a point links to that cell's trials;
// points of cells the campaign lacks link nowhere (CellID 0).
func History(h analysis.History, cellIDs map[string]int) Section {
	sec := Section{ID: "history", Title: "History", Workload: ""}
	byMetric := map[string]int{}
	for _, s := range h.Series {
		key := s.Workload + " " + s.Metric
		i, ok := byMetric[key]
		if !ok {
			i = len(sec.Figures)
			byMetric[key] = i
			sec.Figures = append(sec.Figures, Figure{ID: anchor("h-" + s.Workload + "-" + s.Metric), Kind: Lines,
				Title: s.Workload + ": " + s.Metric + " over " + strconv.Itoa(len(h.Runs)) + " runs", Workload: s.Workload, Metric: s.Metric,
				Unit: s.Unit, Better: s.Better, XLabel: "run", YLabel: axisLabel(s.Metric, s.Unit), Band: "95% CI of each run's mean", Ref: math.NaN()})
		}
		f := &sec.Figures[i]
		ser := Series{Name: result.FactorString(s.Cell)}
		if ser.Name == "" {
			ser.Name = s.Workload
		}
		for _, p := range s.Points {
			ser.Points = append(ser.Points, Point{X: float64(p.Run + 1), Label: strconv.Itoa(p.Run+1) + " (" + h.Runs[p.Run].Campaign.ID + ")",
				Y: p.Mean, Lo: p.CI95[0], Hi: p.CI95[1], N: p.N, CellID: cellIDs[s.Workload+" "+result.FactorString(s.Cell)]})
		}
		f.Series = append(f.Series, ser)
		for _, c := range s.Changepoints {
			// Midway between the series' last run before the change and
			// the first after it.
			x := float64(s.Points[c.Point-1].Run+c.Run)/2 + 1
			label := fmt.Sprintf("changepoint before run %d (%s), %s: %s %+.1f%%", c.Run+1, h.Runs[c.Run].Campaign.ID, ser.Name, c.Verdict, c.Pct)
			f.mark(x, label)
		}
	}
	for i := range sec.Figures {
		f := &sec.Figures[i]
		if len(f.Marks) == 0 {
			f.Note = "No changepoint."
		} else {
			f.Note = fmt.Sprintf("%d changepoint(s), drawn as dashed vertical lines before the first run after the change.", len(f.Marks))
		}
	}
	return sec
}

// mark adds a vertical mark at x, or its label to the one already there.
func (f *Figure) mark(x float64, label string) {
	for i := range f.Marks {
		if f.Marks[i].X == x {
			f.Marks[i].Label += "; " + label
			return
		}
	}
	f.Marks = append(f.Marks, Mark{X: x, Label: label})
}
