package figure

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

const band95 = "95% CI"

// maxSeries is the most series one line or CDF figure draws; more are
// split into figures by the first display factor.
const maxSeries = 12

// bars is one bar per cell of a metric, grouped by the first display
// factor when there are two or more.
func bars(w string, rows []analysis.Row, disp []string) Figure {
	f := Figure{
		ID: anchor(w + "-" + rows[0].Metric), Kind: Bars, Title: w + " — " + rows[0].Metric,
		Workload: w, Metric: rows[0].Metric, Unit: rows[0].Unit, Better: rows[0].Better,
		YLabel: axisLabel(rows[0].Metric, rows[0].Unit), Band: band95, Ref: nan(),
	}
	group := ""
	if len(disp) >= 2 {
		group = disp[0]
	}
	idx := map[string]int{}
	for _, r := range rows {
		name := "all cells"
		if group != "" {
			name = shortFactor(group) + "=" + r.Cell[group]
		}
		i := f.series(idx, name)
		p := point(r)
		if group != "" {
			p.Label = label(r.Cell, disp, group)
		} else {
			p.Label = label(r.Cell, disp)
		}
		f.Series[i].Points = append(f.Series[i].Points, p)
		if r.Baseline {
			f.Note = "baseline: " + label(r.Cell, disp) + "; the difference beside each bar is from it, with its 95% interval (* where it excludes 0)"
		}
	}
	return f
}

// series returns the index of f's series called name (idx maps names to
// indexes), adding the series when it is new.
func (f *Figure) series(idx map[string]int, name string) int {
	i, ok := idx[name]
	if !ok {
		i = len(f.Series)
		idx[name] = i
		f.Series = append(f.Series, Series{Name: name})
	}
	return i
}

// point is a row's mean, interval, trials and difference from baseline.
func point(r analysis.Row) Point {
	p := Point{Y: r.Mean, Lo: nan(), Hi: nan(), CellID: r.CellID, N: r.N, Flagged: r.Flagged, Failed: r.Failed, Baseline: r.Baseline}
	if finite(r.CI95[0]) && finite(r.CI95[1]) {
		p.Lo, p.Hi = r.CI95[0], r.CI95[1]
	}
	for i, v := range r.Values {
		if i < len(r.Seqs) {
			p.Trials = append(p.Trials, TrialValue{Seq: r.Seqs[i], Value: v})
		}
	}
	for i, v := range r.FlaggedValues {
		if i < len(r.FlaggedSeqs) {
			p.FlaggedTrials = append(p.FlaggedTrials, TrialValue{Seq: r.FlaggedSeqs[i], Value: v})
		}
	}
	p.FewTrials = r.FewTrials
	if r.VsBaselinePct != nil {
		p.Delta = fmt.Sprintf("%+.1f%%", *r.VsBaselinePct)
		if ci := r.VsBaselineCI95; ci != nil {
			p.Delta += fmt.Sprintf(" [%+.1f, %+.1f]", ci[0], ci[1])
		}
		if r.Significant != nil && *r.Significant {
			p.Delta += " *"
			p.Significant = true
		}
	}
	return p
}

// valueFunc reads the value a line shows from a row: its y, interval
// (NaN for none) and whether the row has one.
type valueFunc func(analysis.Row) (y, lo, hi float64, ok bool)

func valueOf(r analysis.Row) (float64, float64, float64, bool) {
	lo, hi := nan(), nan()
	if finite(r.CI95[0]) && finite(r.CI95[1]) {
		lo, hi = r.CI95[0], r.CI95[1]
	}
	return r.Mean, lo, hi, r.N > 0
}

func ratioOf(r analysis.Row) (float64, float64, float64, bool) {
	if r.VsBaselinePct == nil {
		return 0, 0, 0, false
	}
	y, lo, hi := 1+*r.VsBaselinePct/100, nan(), nan()
	if ci := r.VsBaselineCI95; ci != nil {
		lo, hi = 1+ci[0]/100, 1+ci[1]/100
	}
	return y, lo, hi, true
}

func slowdownOf(r analysis.Row) (float64, float64, float64, bool) {
	if r.Slowdown == nil {
		return 0, 0, 0, false
	}
	lo, hi := nan(), nan()
	if ci := r.SlowdownCI95; ci != nil {
		lo, hi = ci[0], ci[1]
	}
	return *r.Slowdown, lo, hi, true
}

// lines puts numeric factor x on the horizontal axis, one line per
// combination of the other display factors.
func lines(w string, rows []analysis.Row, disp []string, x string, v valueFunc) Figure {
	f := Figure{
		ID: anchor(w + "-" + rows[0].Metric + "-by-" + x), Kind: Lines,
		Title:    w + " — " + rows[0].Metric + " by " + shortFactor(x),
		Workload: w, Metric: rows[0].Metric, Unit: rows[0].Unit, Better: rows[0].Better,
		XLabel: shortFactor(x), YLabel: axisLabel(rows[0].Metric, rows[0].Unit), Band: band95, Ref: nan(),
	}
	idx := map[string]int{}
	var xs []float64
	for _, r := range rows {
		y, lo, hi, ok := v(r)
		if !ok {
			continue
		}
		xv, _ := Number(r.Cell[x])
		name := label(r.Cell, disp, x)
		i := f.series(idx, name)
		p := point(r)
		p.X, p.Label, p.Y, p.Lo, p.Hi = xv, r.Cell[x], y, lo, hi
		f.Series[i].Points = append(f.Series[i].Points, p)
		if r.Baseline {
			f.Series[i].Baseline = true
		}
		xs = append(xs, xv)
	}
	for i := range f.Series {
		sort.SliceStable(f.Series[i].Points, func(a, b int) bool { return f.Series[i].Points[a].X < f.Series[i].Points[b].X })
	}
	f.LogX = spansDecades(xs)
	var ys []float64
	for _, s := range f.Series {
		for _, p := range s.Points {
			ys = append(ys, p.Y)
		}
	}
	f.LogY = spans(ys, 50)
	return f
}

// ratioLines is a metric against its baseline over x: S2's layer ratios
// versus message size.
func ratioLines(w string, rows []analysis.Row, disp []string, x string) Figure {
	f := lines(w, rows, disp, x, ratioOf)
	f.ID += "-ratio"
	f.Title = w + " — " + rows[0].Metric + ": ratio to the baseline by " + shortFactor(x)
	f.YLabel, f.Unit, f.Ref, f.LogY = "ratio to baseline", "×", 1, false
	f.Note = "Each cell's mean over its baseline cell's (1 = no change), with the 95% interval of the ratio"
	return f
}

// slowdownLines is S1's slowdown (Fig. 3): one instance's time against the
// baseline's.
func slowdownLines(w string, rows []analysis.Row, disp []string, x string) Figure {
	f := lines(w, rows, disp, x, slowdownOf)
	f.ID += "-slowdown"
	f.Title = w + " — slowdown by " + shortFactor(x)
	f.YLabel, f.Unit, f.Ref, f.LogY = "slowdown (×)", "×", 1, false
	f.Better = result.Lower
	f.Note = "The time one instance took for its work against the baseline cell's (1 = no change), with its 95% interval"
	return f
}

func hasDelta(rows []analysis.Row) bool {
	for _, r := range rows {
		if r.VsBaselinePct != nil {
			return true
		}
	}
	return false
}

func hasSlowdown(rows []analysis.Row) bool {
	for _, r := range rows {
		if r.Slowdown != nil {
			return true
		}
	}
	return false
}

// perCopy shows each pair's (or instance's) own value of metric m per
// cell: the mean over the copies, and the range from the slowest copy to
// the fastest (S4's per-pair throughput). Over x when x is given, else as
// bars. ok is false when no cell had two copies.
func perCopy(w string, rows []analysis.Row, m result.MetricID, disp []string, x *string) (Figure, bool) {
	type agg struct {
		r      analysis.Row
		sum    float64
		n      int
		lo, hi float64
		scope  result.Scope
	}
	byCell := map[int]*agg{}
	var order []int
	for _, r := range rows {
		id := r.ID
		if !id.Scope.PerCopy() || id.Kind != result.KindMeasure || id.Role != "" || id.Metric != m.Metric || r.N == 0 {
			continue
		}
		a, ok := byCell[r.CellID]
		if !ok {
			a = &agg{r: r, lo: math.Inf(1), hi: math.Inf(-1), scope: id.Scope}
			byCell[r.CellID] = a
			order = append(order, r.CellID)
		}
		a.sum += r.Mean
		a.n++
		a.lo, a.hi = math.Min(a.lo, r.Mean), math.Max(a.hi, r.Mean)
	}
	many := false
	for _, a := range byCell {
		many = many || a.n >= 2
	}
	if !many {
		return Figure{}, false
	}
	copyName := "pair"
	if byCell[order[0]].scope == result.ScopeInstance {
		copyName = "instance"
	}
	var rs []analysis.Row
	copies := map[int]int{}
	for _, id := range order {
		a := byCell[id]
		r := a.r
		r.Metric, r.Mean, r.CI95 = m.Metric, a.sum/float64(a.n), [2]float64{a.lo, a.hi}
		// N stays the trials (each pair's row has one value per trial);
		// the pairs are counted apart.
		r.Values, r.Seqs, r.VsBaselinePct, r.VsBaselineCI95, r.Significant, r.Baseline = nil, nil, nil, nil, nil, false
		r.FlaggedValues, r.FlaggedSeqs, r.FewTrials = nil, nil, false
		rs = append(rs, r)
		copies[r.CellID] = a.n
	}
	var f Figure
	if x != nil {
		f = lines(w, rs, disp, *x, valueOf)
	} else {
		f = bars(w, rs, disp)
	}
	f.ID += "-per-" + copyName
	f.Title = w + " — " + m.Metric + " per " + copyName
	f.Band = "range over " + copyName + "s"
	for i := range f.Series {
		for j := range f.Series[i].Points {
			f.Series[i].Points[j].Copies = copies[f.Series[i].Points[j].CellID]
		}
	}
	f.Note = fmt.Sprintf("The mean over a cell's %ss of each %s's mean over trials; the band runs from the lowest %s to the highest", copyName, copyName, copyName)
	return f, true
}

// heatmaps shows a metric over two numeric factors (S1's parents ×
// children), one heatmap per combination of the other display factors.
func heatmaps(w string, rows []analysis.Row, disp []string, a, b string) []Figure {
	type grid struct {
		name string
		rows []analysis.Row
	}
	// The heatmap's cells are told apart by a and b: group by the other
	// factors, but not by those a or b sets (a bundle naming the children
	// per parent).
	sub := cellsOf(rows)
	skip := []string{a, b}
	for _, k := range disp {
		if determines(sub, a, k) || determines(sub, b, k) {
			skip = append(skip, k)
		}
	}
	var grids []*grid
	idx := map[string]*grid{}
	for _, r := range rows {
		name := label(r.Cell, disp, skip...)
		g, ok := idx[name]
		if !ok {
			g = &grid{name: name}
			idx[name] = g
			grids = append(grids, g)
		}
		g.rows = append(g.rows, r)
	}
	var out []Figure
	for _, g := range grids {
		cols, rowsL := numericLevels(g.rows, a), numericLevels(g.rows, b)
		h := &Heat{RowLabel: shortFactor(b), ColLabel: shortFactor(a), Rows: rowsL, Cols: cols, SubLabel: band95}
		h.Cells = make([][]*HeatCell, len(rowsL))
		for i := range h.Cells {
			h.Cells[i] = make([]*HeatCell, len(cols))
		}
		for _, r := range g.rows {
			if r.N == 0 {
				continue // every trial failed: no entry
			}
			i, j := indexOf(rowsL, r.Cell[b]), indexOf(cols, r.Cell[a])
			c := &HeatCell{Value: r.Mean, Lo: nan(), Hi: nan(), CellID: r.CellID, Text: report.Sig(r.Mean)}
			if finite(r.CI95[0]) && finite(r.CI95[1]) {
				c.Lo, c.Hi = r.CI95[0], r.CI95[1]
				c.Sub = "[" + report.Sig(c.Lo) + ", " + report.Sig(c.Hi) + "]"
			}
			h.Cells[i][j] = c
		}
		out = append(out, Figure{
			ID: anchor(w + "-" + rows[0].Metric + "-" + a + "-x-" + b + "-" + g.name), Kind: Heatmap,
			Title:    w + " — " + rows[0].Metric + " by " + shortFactor(a) + " × " + shortFactor(b) + suffix(g.name),
			Workload: w, Metric: rows[0].Metric, Unit: rows[0].Unit, Better: rows[0].Better,
			XLabel: shortFactor(a), YLabel: shortFactor(b), Heat: h, Ref: nan(),
		})
	}
	return out
}

// suffix is " (name)", or nothing for a figure of all cells.
func suffix(name string) string {
	if name == "all" || name == "" {
		return ""
	}
	return " (" + name + ")"
}

// numericLevels are the levels of factor k among rows, in numeric order.
func numericLevels(rows []analysis.Row, k string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if l := r.Cell[k]; !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := Number(out[i])
		b, _ := Number(out[j])
		return a < b
	})
	return out
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}

// cdfFigures draws each pooled histogram of a workload as CDFs, one line
// per cell.
func cdfFigures(w string, cdfs []analysis.CDF, disp []string) []Figure {
	type key struct{ hist, role string }
	groups := map[key][]analysis.CDF{}
	var order []key
	for _, c := range cdfs {
		if c.Workload != w || len(c.Points) == 0 {
			continue
		}
		k := key{c.Histogram, c.Role}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	var out []Figure
	for _, k := range order {
		cs := groups[k]
		// Too many cells for one figure: one per level of the first
		// display factor.
		parts := [][]analysis.CDF{cs}
		if len(cs) > maxSeries && len(disp) > 0 {
			parts = nil
			pi := map[string]int{}
			for _, c := range cs {
				l := c.Cell[disp[0]]
				i, ok := pi[l]
				if !ok {
					i = len(parts)
					pi[l] = i
					parts = append(parts, nil)
				}
				parts[i] = append(parts[i], c)
			}
		}
		for _, part := range parts {
			what := k.hist
			if k.role != "" {
				what = k.role + " " + what
			}
			title := w + " — CDF of every " + what + " (all trials pooled)"
			var skip []string
			if len(parts) > 1 {
				title += ", " + shortFactor(disp[0]) + "=" + part[0].Cell[disp[0]]
				skip = []string{disp[0]}
			}
			f := Figure{
				ID: anchor(w + "-cdf-" + what + "-" + part[0].Cell[firstOr(disp)]), Kind: CDF, Title: title,
				Workload: w, Unit: part[0].Unit, XLabel: axisLabel(what, part[0].Unit), YLabel: "fraction ≤ x",
				Band: "", Ref: nan(),
				Note: "Each line pools every value of a cell's trials; the percentiles in the tables are the mean of each trial's own",
			}
			var xs []float64
			for _, c := range part {
				s := Series{Name: label(c.Cell, disp, skip...) + " (n=" + strconv.FormatInt(c.Count, 10) + ")"}
				for _, p := range c.Points {
					s.Points = append(s.Points, Point{X: p.Value, Y: p.Q, Lo: nan(), Hi: nan(), CellID: c.CellID})
					xs = append(xs, p.Value)
				}
				f.Series = append(f.Series, s)
			}
			f.LogX = spans(xs, 5)
			out = append(out, f)
		}
	}
	return out
}

func firstOr(disp []string) string {
	if len(disp) == 0 {
		return ""
	}
	return disp[0]
}

// interference is S0's matrices: for each case (the cell's levels other
// than the neighbour), targets × neighbours, each entry the target's
// headline metric's IR with its interval; a target whose type lists
// several matrix metrics (STREAM's four kernels) has one more heatmap per
// further metric (analysis.MatrixMetrics), and then each title names its
// rows' metrics.
func interference(rows []analysis.Row) (Section, bool) {
	targets, metrics := analysis.MatrixMetrics(rows)
	type key struct {
		caseKey, target, ant string
		rank                 int
	}
	entries := map[key]analysis.Row{}
	var cases, ants []string
	ranks := 0
	for _, r := range rows {
		rank, ok := analysis.MatrixRank(metrics, r)
		if !ok || r.IR == nil {
			continue
		}
		ant := r.Cell[vocab.FNeighbour]
		if ant == "" || ant == vocab.NeighbourNone {
			continue
		}
		ck := analysis.CaseOf(r.Cell)
		if !contains(cases, ck) {
			cases = append(cases, ck)
		}
		if !contains(ants, ant) {
			ants = append(ants, ant)
		}
		entries[key{ck, r.Workload, ant, rank}] = r
		ranks = max(ranks, rank+1)
	}
	if len(cases) == 0 {
		return Section{}, false
	}
	sort.Strings(cases)
	sec := Section{ID: "interference", Title: "Interference (S0's matrices)", Factors: []string{vocab.FNeighbour}}
	measured := map[key]bool{} // by target and rank
	for k := range entries {
		measured[key{target: k.target, rank: k.rank}] = true
	}
	rowNames, rowTargets := make([][]string, ranks), make([][]string, ranks)
	for rank := range ranks {
		for _, t := range targets {
			if measured[key{target: t, rank: rank}] {
				rowNames[rank] = append(rowNames[rank], t+" "+metrics[t][rank].Metric)
				rowTargets[rank] = append(rowTargets[rank], t)
			}
		}
	}
	for _, ck := range cases {
		for rank := range ranks {
			entry := func(t, a string) (analysis.Row, bool) {
				r, ok := entries[key{ck, t, a, rank}]
				return r, ok
			}
			if f, ok := irHeatmap(ck, rank, ranks, rowNames[rank], rowTargets[rank], ants, entry); ok {
				sec.Figures = append(sec.Figures, f)
			}
		}
	}
	uniqueIDs(sec.Figures)
	return sec, true
}

// irHeatmap is one of S0's matrices: a case's IR of the targets' rank-th
// matrix metric (rows, named by rowNames) beside each neighbour (ants),
// entry gives each, of ranks in all; false when the case has none.
func irHeatmap(ck string, rank, ranks int, rowNames, rowTargets, ants []string, entry func(t, a string) (analysis.Row, bool)) (Figure, bool) {
	h := &Heat{RowLabel: "target (metric)", ColLabel: "neighbours", Rows: rowNames, Cols: ants, Diverging: true, SubLabel: band95}
	has := false
	for _, t := range rowTargets {
		line := make([]*HeatCell, len(ants))
		for j, a := range ants {
			r, ok := entry(t, a)
			if !ok {
				continue
			}
			has = true
			c := &HeatCell{Value: *r.IR, Lo: nan(), Hi: nan(), CellID: r.CellID, Text: fmt.Sprintf("%+.3f", *r.IR)}
			if r.IRCI95 != nil {
				c.Lo, c.Hi = r.IRCI95[0], r.IRCI95[1]
				c.Sub = fmt.Sprintf("[%+.2f, %+.2f]", c.Lo, c.Hi)
			}
			if r.IRExcludes0 != nil && *r.IRExcludes0 {
				c.Mark = true
				c.Text += " *"
			}
			line[j] = c
		}
		h.Cells = append(h.Cells, line)
	}
	title, id := ck, "ir-"+ck
	if ranks > 1 {
		title += " — " + strings.Join(rowNames, ", ")
	}
	if rank > 0 {
		id += "-" + strings.Join(rowNames, "-")
	}
	return Figure{
		ID: anchor(id), Kind: Heatmap, Title: "Interference ratio — " + title,
		XLabel: "neighbours", YLabel: "target", Heat: h, Ref: nan(), Unit: "IR",
		Note: "IR = (mean beside the neighbours − mean alone) / mean alone, negative = worse for every metric; [95% interval]; * = the interval excludes 0",
	}, has
}

// axisLabel is a metric with its unit.
func axisLabel(metric, unit string) string {
	if unit == "" {
		return metric
	}
	return metric + " (" + unit + ")"
}

// spansDecades reports whether positive values span a factor of 20 or
// more: a log axis shows them better.
func spansDecades(xs []float64) bool { return spans(xs, 20) }

// spans reports whether positive values span a factor of at least k.
func spans(xs []float64, k float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if x <= 0 {
			return false
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return len(xs) > 0 && hi/lo >= k
}
