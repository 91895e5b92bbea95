// Package figure decides which figures show a campaign and computes their
// data: bars per cell, lines over a numeric factor with interval bands,
// heatmaps over two numeric factors, S0's interference matrices, and CDFs
// of pooled histograms. The choice follows the experiment's shape — which
// factors vary, which of them are numbers — never the experiment's name,
// so any variation of a study gets the study's figures. It draws nothing:
// internal/htmlreport renders what it returns, and a test counts what was
// drawn against it.
package figure

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Kind is how a figure is drawn.
type Kind string

const (
	Bars    Kind = "bars"    // one horizontal bar per cell, its interval and each trial's value
	Lines   Kind = "lines"   // a numeric factor on x, one line per combination of the other factors, interval bands
	Heatmap Kind = "heatmap" // two numeric factors, or targets × neighbours (S0's matrices)
	CDF     Kind = "cdf"     // the distribution of every request of a cell's trials
)

// Figure is one chart's data.
type Figure struct {
	ID       string // an HTML anchor, unique in a report
	Kind     Kind
	Title    string
	Workload string
	Metric   string // as reports print it; "" for a CDF
	Unit     string
	Better   result.Better
	XLabel   string
	YLabel   string
	LogX     bool
	LogY     bool // values span decades (latencies over message sizes)
	// Band says what the shaded interval around a line or the whisker of a
	// bar is ("95% CI", "range over pairs").
	Band   string
	Series []Series
	Heat   *Heat
	// Ref is a reference value drawn across the plot (1 for ratios), NaN
	// for none.
	Ref  float64
	Note string
	// Marks are vertical lines across a line chart at an x (a history's
	// changepoints), each with what it marks.
	Marks []Mark
}

// Mark is a vertical line of a line chart.
type Mark struct {
	X     float64
	Label string
}

// Points is how many points (bars, markers, heatmap cells) the figure
// draws: what a test counts.
func (f Figure) Points() int {
	n := 0
	for _, s := range f.Series {
		n += len(s.Points)
	}
	if f.Heat != nil {
		for _, r := range f.Heat.Cells {
			for _, c := range r {
				if c != nil {
					n++
				}
			}
		}
	}
	return n
}

// Series is one line, one group of bars or one CDF.
type Series struct {
	Name     string
	Baseline bool // the baseline cell's (a bar) or the baseline's line
	Points   []Point
}

// Point is one cell's value: its mean with its interval (NaN when none),
// its trials, and how it compares with the baseline.
type Point struct {
	X      float64 // the numeric level (Lines), the quantile (CDF)
	Label  string  // the cell's levels (Bars), the level as written (Lines)
	Y      float64
	Lo, Hi float64
	CellID int
	N      int
	Trials []TrialValue
	// Delta is the difference from the baseline as the table prints it
	// ("+12.3% [+4.1, +20.5] *"), "" for the baseline and when none.
	Delta       string
	Significant bool
	Baseline    bool // the baseline cell's
	Flagged     int
	Failed      int
	// FlaggedTrials are the trials whose conditions were not as planned:
	// drawn apart, in no statistic of the point.
	FlaggedTrials []TrialValue
	// FewTrials: the interval rests on fewer than three trials.
	FewTrials bool
	// Copies is, for a per-pair (per-instance) point, how many pairs its
	// mean and range are over; N stays the trials.
	Copies int
}

// TrialValue is one trial's value.
type TrialValue struct {
	Seq   int
	Value float64
}

// Heat is a heatmap: rows × columns of values with intervals.
type Heat struct {
	RowLabel, ColLabel string
	Rows, Cols         []string
	Cells              [][]*HeatCell // [row][col], nil where nothing was measured
	// Diverging colours around 0 (an interference ratio); otherwise a
	// sequential scale from the smallest to the largest value.
	Diverging bool
	// SubLabel names what each cell's Sub is ("95% CI").
	SubLabel string
}

// HeatCell is one entry of a heatmap.
type HeatCell struct {
	Value  float64
	Lo, Hi float64 // NaN without an interval
	Mark   bool    // the interval excludes 0 (S0's significance)
	Text   string  // the value (and the mark)
	Sub    string  // its interval, "" without one
	CellID int
}

// Section is one workload's figures, or the campaign's interference
// matrices (Workload "").
type Section struct {
	ID       string
	Title    string
	Workload string
	Type     string
	Figures  []Figure
	// Factors are the factors that vary among its cells, as figures show
	// them.
	Factors []string
	// Zero are the metrics that were 0 in every trial of every cell (no
	// errors, no retransmissions): named, not drawn.
	Zero []string
	// NotDrawn says which cells the figures leave out and why: their
	// numbers compare with nothing (a platform under emulation). The
	// tables and the trial list still show them.
	NotDrawn []string
}

// Build chooses and computes the figures of a campaign from its rows (in
// analysis.Rows order) and its cells' pooled histograms.
func Build(rows []analysis.Row, cdfs []analysis.CDF) []Section {
	var out []Section
	if s, ok := interference(rows); ok {
		out = append(out, s)
	}
	byWorkload := map[string][]analysis.Row{}
	var order []string
	for _, r := range rows {
		if _, ok := byWorkload[r.Workload]; !ok {
			order = append(order, r.Workload)
		}
		byWorkload[r.Workload] = append(byWorkload[r.Workload], r)
	}
	for _, w := range order {
		out = append(out, workloadSection(w, byWorkload[w], cdfs))
	}
	return out
}

// workloadSection is one workload's figures: each figure metric's, as
// metricFigures chooses them from the campaign's shape, then the CDFs of
// its pooled histograms.
func workloadSection(w string, all []analysis.Row, cdfs []analysis.CDF) Section {
	rows, dropped := comparable(all)
	if len(rows) == 0 {
		return Section{ID: anchor("w-" + w), Title: w, Workload: w, Type: all[0].WorkloadType, NotDrawn: dropped}
	}
	cells := cellsOf(rows)
	disp := displayFactors(cells)
	num := numericFactors(cells, disp)
	sec := Section{ID: anchor("w-" + w), Title: w, Workload: w, Type: rows[0].WorkloadType, Factors: disp, NotDrawn: dropped}
	for i, m := range figureMetrics(rows) {
		sh := shape{w: w, rows: rows, cells: cells, disp: disp, num: num, metric: m, mrows: rowsOf(rows, m), rank: i}
		if allZero(sh.mrows) {
			sec.Zero = append(sec.Zero, sh.mrows[0].Metric)
			continue
		}
		if len(num) > 0 && distinctX(sh.mrows, num[0]) >= 2 {
			sh.x = num[0]
		}
		for _, rule := range metricFigures {
			if rule.when(sh) {
				sec.Figures = append(sec.Figures, rule.draw(sh)...)
			}
		}
	}
	sec.Figures = append(sec.Figures, cdfFigures(w, cdfs, disp)...)
	uniqueIDs(sec.Figures)
	return sec
}

// shape is what chooses a metric's figures: its workload's rows, cells
// and displayed factors, the metric's rows, its rank among the workload's
// figure metrics (0: the headline, the workload's first measure), and the
// numeric factor it is drawn over ("" when none varies over two values or
// more: a percentile of a single instance).
type shape struct {
	w      string
	rows   []analysis.Row
	cells  []cell
	disp   []string
	num    []string // the numeric factors among disp
	metric result.MetricID
	mrows  []analysis.Row
	rank   int
	x      string
}

// headline: the workload's first measure, which gets the figures that
// explain a whole cell (per copy, slowdown, heatmaps).
func (s shape) headline() bool { return s.rank == 0 }

// leadingMetrics is how many of a workload's first metrics get a ratio
// figure beside their lines: S2's throughput and latency.
const leadingMetrics = 2

// metricFigures are the figures a metric can get, in the order they are
// shown, each with when the shape calls for it. A new figure is a rule
// here and a function that computes it (and, for a new Kind, how
// htmlreport draws it).
var metricFigures = []struct {
	name string
	when func(shape) bool
	draw func(shape) []Figure
}{
	// Bars, one per cell, where no numeric factor varies.
	{"bars", func(s shape) bool { return s.x == "" }, func(s shape) []Figure { return []Figure{bars(s.w, s.mrows, s.disp)} }},
	// Lines over the numeric factor, split into small multiples; beside
	// each, the ratio to the baseline where the baseline moves along x (S2's
	// previous layer at every size) and the slowdown where there is one.
	{"lines", func(s shape) bool { return s.x != "" }, overX},
	// The headline's value of each copy (pair, instance) of a cell.
	{"per-copy", func(s shape) bool { return s.headline() && (s.x != "" || len(s.num) == 0) }, func(s shape) []Figure {
		var x *string
		if s.x != "" {
			x = &s.x
		}
		if f, ok := perCopy(s.w, s.rows, s.metric, s.disp, x); ok {
			return []Figure{f}
		}
		return nil
	}},
	// Heatmaps of the headline over two numeric factors.
	{"heatmaps", func(s shape) bool { return s.headline() && s.x != "" }, func(s shape) []Figure {
		if a, b, ok := numericPair(s.cells); ok {
			return heatmaps(s.w, onlyNumeric(s.mrows, a, b), s.disp, a, b)
		}
		return nil
	}},
}

// overX is a metric's lines over its numeric factor, with their ratio and
// slowdown figures.
func overX(s shape) []Figure {
	var out []Figure
	for _, part := range split(s.mrows, s.disp, s.x) {
		out = append(out, lines(s.w, part.rows, part.disp, s.x, valueOf).titled(part.name))
		if hasDelta(part.rows) && baselineAlong(part.rows, s.x) && s.rank < leadingMetrics {
			out = append(out, ratioLines(s.w, part.rows, part.disp, s.x).titled(part.name))
		}
		if hasSlowdown(part.rows) && s.headline() {
			out = append(out, slowdownLines(s.w, part.rows, part.disp, s.x).titled(part.name))
		}
	}
	return out
}

// maxLines is the most lines one figure over a numeric factor draws
// before it is split into small multiples, one per level of the first
// other factor: more bands than that overlap into one.
const maxLines = 6

// part is the rows of one small multiple, the factors its lines differ
// by, and what it is of ("" for a figure that was not split).
type part struct {
	name string
	rows []analysis.Row
	disp []string
}

// split divides rows drawn over x into small multiples when they would
// draw more than maxLines lines.
func split(rows []analysis.Row, disp []string, x string) []part {
	lines := map[string]bool{}
	for _, r := range rows {
		lines[label(r.Cell, disp, x)] = true
	}
	var by string
	for _, k := range disp {
		if k != x {
			by = k
			break
		}
	}
	if len(lines) <= maxLines || by == "" || len(disp) < 3 {
		return []part{{rows: rows, disp: disp}}
	}
	var out []part
	idx := map[string]int{}
	rest := make([]string, 0, len(disp)-1)
	for _, k := range disp {
		if k != by {
			rest = append(rest, k)
		}
	}
	for _, r := range rows {
		l := r.Cell[by]
		i, ok := idx[l]
		if !ok {
			i = len(out)
			idx[l] = i
			out = append(out, part{name: shortFactor(by) + "=" + l, disp: rest})
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}

// titled adds a small multiple's name to a figure's title and ID.
func (f Figure) titled(name string) Figure {
	if name != "" {
		f.Title += " — " + name
		f.ID += "-" + anchor(name)
	}
	return f
}

// distinctX counts the values of x among rows with a value.
func distinctX(rows []analysis.Row, x string) int {
	seen := map[string]bool{}
	for _, r := range rows {
		if r.N > 0 {
			seen[r.Cell[x]] = true
		}
	}
	return len(seen)
}

// baselineAlong reports whether rows' cells are compared with baselines
// at two or more values of x, or are baselines there themselves.
func baselineAlong(rows []analysis.Row, x string) bool {
	seen := map[string]bool{}
	for _, r := range rows {
		if r.Baseline {
			seen[r.Cell[x]] = true
		}
	}
	return len(seen) >= 2
}

// comparable drops the rows whose numbers compare with nothing (a
// platform under emulation) and names them.
func comparable(rows []analysis.Row) (keep []analysis.Row, dropped []string) {
	seen := map[string]bool{}
	for _, r := range rows {
		if r.NotComparable == "" {
			keep = append(keep, r)
			continue
		}
		if !seen[r.NotComparable] {
			seen[r.NotComparable] = true
			dropped = append(dropped, r.NotComparable)
		}
	}
	return keep, dropped
}

// figureMetrics are the metrics a workload's figures show, in row order:
// its trial's own measures (one pair's or all pairs' together), the
// statistics across its copies (fairness, overlap) and its entities'
// lifecycle; not telemetry, not a role's or a copy's own, not a
// neighbour's.
func figureMetrics(rows []analysis.Row) []result.MetricID {
	var out []result.MetricID
	for _, r := range rows {
		id := r.ID
		if id.Role != "" || (id.Scope != result.ScopeTrial && id.Scope != result.ScopeAggregate) || id.Kind == result.KindTelemetry {
			continue
		}
		dup := false
		for _, m := range out {
			if analysis.SameMetric(m, id) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, id)
		}
	}
	// The workload's own measures first, then the statistics across its
	// copies and its entities' lifecycle.
	sort.SliceStable(out, func(i, j int) bool { return kindRank(out[i].Kind) < kindRank(out[j].Kind) })
	return out
}

func kindRank(k result.Kind) int {
	switch k {
	case result.KindMeasure:
		return 0
	case result.KindLifecycle:
		return 1
	}
	return 2
}

// allZero reports whether every trial of every row was 0.
func allZero(rows []analysis.Row) bool {
	for _, r := range rows {
		if r.N == 0 || r.Mean != 0 || r.SD != 0 {
			return false
		}
	}
	return true
}

func rowsOf(rows []analysis.Row, m result.MetricID) []analysis.Row {
	var out []analysis.Row
	for _, r := range rows {
		if analysis.SameMetric(r.ID, m) {
			out = append(out, r)
		}
	}
	return out
}

// cell is one cell's factors.
type cell struct {
	id      int
	factors map[string]string
}

func cellsOf(rows []analysis.Row) []cell {
	seen := map[int]bool{}
	var out []cell
	for _, r := range rows {
		if !seen[r.CellID] {
			seen[r.CellID] = true
			out = append(out, cell{r.CellID, r.Cell})
		}
	}
	return out
}

// displayFactors are the factors that vary among cells, without those
// another one determines (a bundle's platform and network beside the
// bundle's name), in the order a table shows its columns.
func displayFactors(cells []cell) []string {
	levels := map[string]map[string]bool{}
	for _, c := range cells {
		for k := range c.factors {
			levels[k] = map[string]bool{}
		}
	}
	for _, c := range cells {
		for k := range levels {
			levels[k][level(c, k)] = true
		}
	}
	var varying []string
	for k, l := range levels {
		if len(l) > 1 {
			varying = append(varying, k)
		}
	}
	analysis.SortFactors(varying)
	var out []string
	for _, k := range varying {
		redundant := false
		for _, o := range varying {
			if o == k || !determines(cells, o, k) {
				continue
			}
			// o determines k: k is redundant unless k determines o too
			// and is the one to keep — the bundle: the higher rank, or at
			// equal rank the one named in words (topology=two-hosts-1gbe
			// over hosts=2), then the first by name.
			if !determines(cells, k, o) || prefer(cells, o, k) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, k)
		}
	}
	return out
}

// prefer reports whether factor a, not b, names what both say.
func prefer(cells []cell, a, b string) bool {
	ra, rb := analysis.FactorRank(a), analysis.FactorRank(b)
	if ra != rb {
		return ra > rb
	}
	if wa, wb := words(cells, a), words(cells, b); wa != wb {
		return wa
	}
	return a < b
}

// words reports whether some level of factor k is not a number.
func words(cells []cell, k string) bool {
	for _, c := range cells {
		if _, ok := Number(level(c, k)); !ok && level(c, k) != "" {
			return true
		}
	}
	return false
}

// level is a cell's level of factor k, "" when it lacks it.
func level(c cell, k string) string { return c.factors[k] }

// determines reports whether factor a's level fixes factor b's among cells.
func determines(cells []cell, a, b string) bool {
	m := map[string]string{}
	for _, c := range cells {
		la, lb := level(c, a), level(c, b)
		if v, ok := m[la]; ok && v != lb {
			return false
		}
		m[la] = lb
	}
	return true
}

// numericPair finds two factors that are both numbers, on at least 4
// cells, taking 2 or more values each there, and not one following from
// the other: S1's parents × children, where the bundles that set the
// number of children per parent (a factor other cells lack) are the
// cells that have both. The second factor is the one with fewer values
// (rows of the heatmap).
func numericPair(cells []cell) (a, b string, ok bool) {
	names := map[string]bool{}
	for _, c := range cells {
		for k := range c.factors {
			names[k] = true
		}
	}
	var ks []string
	for k := range names {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	best := 0
	for i, x := range ks {
		for _, y := range ks[i+1:] {
			var sub []cell
			for _, c := range cells {
				_, okx := Number(level(c, x))
				_, oky := Number(level(c, y))
				if okx && oky {
					sub = append(sub, c)
				}
			}
			nx, ny := distinct(sub, x), distinct(sub, y)
			if len(sub) < 4 || nx < 2 || ny < 2 || determines(sub, x, y) || determines(sub, y, x) || len(sub) <= best {
				continue
			}
			best = len(sub)
			a, b, ok = x, y, true
			if ny > nx {
				a, b = y, x
			}
		}
	}
	return a, b, ok
}

func distinct(cells []cell, k string) int {
	seen := map[string]bool{}
	for _, c := range cells {
		seen[level(c, k)] = true
	}
	return len(seen)
}

// onlyNumeric keeps the rows whose cells have numbers for a and b.
func onlyNumeric(rows []analysis.Row, a, b string) []analysis.Row {
	var out []analysis.Row
	for _, r := range rows {
		_, oka := Number(r.Cell[a])
		_, okb := Number(r.Cell[b])
		if oka && okb {
			out = append(out, r)
		}
	}
	return out
}

// numericFactors are the display factors whose levels are all numbers
// (sizes with a unit included) taking at least 3 values, most levels first.
func numericFactors(cells []cell, disp []string) []string {
	type nf struct {
		name string
		n    int
	}
	var out []nf
	for _, k := range disp {
		vals := map[float64]bool{}
		ok := true
		for _, c := range cells {
			v, isNum := Number(level(c, k))
			if !isNum {
				ok = false
				break
			}
			vals[v] = true
		}
		if ok && len(vals) >= 3 {
			out = append(out, nf{k, len(vals)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].n > out[j].n })
	names := make([]string, len(out))
	for i, f := range out {
		names[i] = f.name
	}
	return names
}

// Number reads a factor level as a number: "16", "0.5", "128KiB", "5MB".
func Number(s string) (float64, bool) {
	if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return v, true
	}
	if b, err := vocab.ParseSize(s); err == nil {
		return float64(b), true
	}
	return 0, false
}

// label names a cell by its levels of the display factors other than skip.
func label(c map[string]string, disp []string, skip ...string) string {
	var parts []string
	for _, k := range disp {
		if contains(skip, k) || c[k] == "" {
			continue // skipped, or a factor this cell lacks
		}
		parts = append(parts, shortFactor(k)+"="+c[k])
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

func shortFactor(k string) string { return strings.TrimPrefix(k, "param.") }

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// anchor makes s an HTML id.
func anchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return b.String()
}

// uniqueIDs suffixes repeated figure IDs.
func uniqueIDs(fs []Figure) {
	seen := map[string]int{}
	for i := range fs {
		id := fs[i].ID
		seen[id]++
		if n := seen[id]; n > 1 {
			fs[i].ID = id + "-" + strconv.Itoa(n)
		}
	}
}

func nan() float64 { return math.NaN() }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
