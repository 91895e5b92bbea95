package htmlreport

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/figure"
	"github.com/ctrbench/ctrbench/internal/report"
)

// Figures are drawn as inline SVG in a 640-unit-wide viewBox that scales
// to the page; colours and text come from the page's CSS (classes), so the
// light and dark themes apply. Every drawn value carries class "pt" and
// every series is a <g class="series">: what the browser test counts.

const (
	svgW   = 640.0
	padL   = 64.0
	padR   = 16.0
	padTop = 14.0
	padBot = 46.0
)

// palette is Okabe and Ito's colour-blind-safe set, then four more.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8C6D00", "#555555", "#6A3D9A", "#B15928", "#1B9E77", "#E7298A"}

func colour(i int) string { return palette[i%len(palette)] }

// dash varies the stroke of series beyond the palette's length.
func dash(i int) string {
	if i < len(palette) {
		return ""
	}
	return ` stroke-dasharray="6 3"`
}

// scale maps data to pixels, linearly or in log10.
type scale struct {
	lo, hi, p0, p1 float64
	log            bool
}

func (s scale) at(v float64) float64 {
	lo, hi := s.lo, s.hi
	if s.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	if hi == lo {
		return (s.p0 + s.p1) / 2
	}
	return s.p0 + (v-lo)/(hi-lo)*(s.p1-s.p0)
}

// ticks are the scale's labelled values.
func (s scale) ticks() []float64 {
	if s.log {
		var out []float64
		for e := math.Floor(math.Log10(s.lo)); e <= math.Ceil(math.Log10(s.hi)); e++ {
			if v := math.Pow(10, e); v >= s.lo*0.999 && v <= s.hi*1.001 {
				out = append(out, v)
			}
		}
		if len(out) >= 2 {
			return out
		}
		return []float64{s.lo, s.hi}
	}
	return niceTicks(s.lo, s.hi, 5)
}

// niceRange widens [lo, hi] to round numbers and returns it.
func niceRange(lo, hi float64) (float64, float64) {
	if !(hi > lo) {
		if lo == 0 {
			return 0, 1
		}
		d := math.Abs(lo) * 0.1
		lo, hi = lo-d, hi+d
	}
	step := niceStep(lo, hi, 5)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

func niceStep(lo, hi float64, n int) float64 {
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	step := niceStep(lo, hi, n)
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

// logRange widens positive [lo, hi] to whole decades.
func logRange(lo, hi float64) (float64, float64) {
	return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
}

// tickLabel prints a tick compactly: 1k, 2.5M, 0.001.
func tickLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string { return html.EscapeString(s) }

// svgOpen starts a figure's SVG of height h.
func svgOpen(b *strings.Builder, h float64, title string) {
	fmt.Fprintf(b, `<svg class="chart" viewBox="0 0 %s %s" role="img" aria-label="%s" preserveAspectRatio="xMidYMin meet">`, f1(svgW), f1(h), esc(title))
}

// drawFigure renders f as SVG and its legend as HTML.
func drawFigure(f figure.Figure) (svg, legend string) {
	var b strings.Builder
	switch f.Kind {
	case figure.Bars:
		drawBars(&b, f)
	case figure.Lines, figure.CDF:
		drawLines(&b, f)
	case figure.Heatmap:
		drawHeat(&b, f)
	}
	if f.Kind == figure.Heatmap || (f.Kind == figure.Bars && len(f.Series) < 2) {
		return b.String(), ""
	}
	var l strings.Builder
	l.WriteString(`<ul class="legend">`)
	for i, s := range f.Series {
		base := ""
		if s.Baseline {
			base = " (baseline)"
		}
		fmt.Fprintf(&l, `<li><span class="sw" style="background:%s"></span>%s%s</li>`, colour(i), esc(s.Name), base)
	}
	l.WriteString(`</ul>`)
	return b.String(), l.String()
}

// drawBars draws one horizontal bar per point, its label and difference
// from the baseline above it, the interval as a whisker and each trial as
// a dot that links to its row in the trials table.
func drawBars(b *strings.Builder, f figure.Figure) {
	const rowH = 36.0
	n, lo, hi := barsExtent(f)
	lo, hi = niceRange(lo, hi)
	c := barChart{b: b, f: f, left: 12.0}
	h := padTop + float64(n)*rowH + padBot
	c.sx = scale{lo: lo, hi: hi, p0: c.left, p1: svgW - padR}
	svgOpen(b, h, f.Title)
	c.axis(padTop + float64(n)*rowH)
	y := padTop
	for i, s := range f.Series {
		fmt.Fprintf(b, `<g class="series" data-name="%s">`, esc(s.Name))
		for _, p := range s.Points {
			c.row(i, s, p, y)
			y += rowH
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
}

// barsExtent counts a bar figure's points and finds the range its values,
// intervals and trials (flagged ones too) span, zero always included.
func barsExtent(f figure.Figure) (n int, lo, hi float64) {
	for _, s := range f.Series {
		for _, p := range s.Points {
			n++
			for _, v := range []float64{p.Y, p.Lo, p.Hi} {
				if finiteF(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			for _, t := range append(p.Trials, p.FlaggedTrials...) {
				if finiteF(t.Value) {
					lo, hi = math.Min(lo, t.Value), math.Max(hi, t.Value)
				}
			}
		}
	}
	return n, lo, hi
}

// barChart is a bar figure being drawn: where it is written, the figure,
// its x scale and the left edge of its labels and bars.
type barChart struct {
	b    *strings.Builder
	f    figure.Figure
	sx   scale
	left float64
}

// axis draws the vertical grid lines with their tick labels below the
// rows, which end at bottom, and the axis's label under them.
func (c barChart) axis(bottom float64) {
	for _, t := range c.sx.ticks() {
		x := c.sx.at(t)
		fmt.Fprintf(c.b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			f1(x), f1(padTop), f1(x), f1(bottom), f1(x), f1(bottom+14), tickLabel(t))
	}
	fmt.Fprintf(c.b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, f1((c.left+svgW-padR)/2), f1(bottom+34), esc(c.f.YLabel))
}

// row draws point p of series i (the series s) in the row at y: its
// label and difference from the baseline, then its bar, whisker and
// trials, or a note saying why it has no value.
func (c barChart) row(i int, s figure.Series, p figure.Point, y float64) {
	b := c.b
	name := p.Label
	if len(c.f.Series) > 1 {
		name = s.Name + " " + p.Label
	}
	fmt.Fprintf(b, `<text class="bar-label" x="%s" y="%s">%s</text>`, f1(c.left), f1(y+11), esc(name))
	if p.Delta != "" {
		cls := "delta"
		if p.Significant {
			cls += " sig"
		}
		fmt.Fprintf(b, `<text class="%s" x="%s" y="%s" text-anchor="end">%s</text>`, cls, f1(svgW-padR), f1(y+11), esc(p.Delta))
	} else if p.Baseline {
		fmt.Fprintf(b, `<text class="delta" x="%s" y="%s" text-anchor="end">baseline</text>`, f1(svgW-padR), f1(y+11))
	}
	if p.N == 0 || !finiteF(p.Y) {
		if p.Flagged > 0 {
			fmt.Fprintf(b, `<text class="pt missing" x="%s" y="%s">no trial ran as planned (%d flagged, %d failed): see the flagged trials</text>`, f1(c.left), f1(y+26), p.Flagged, p.Failed)
		} else {
			fmt.Fprintf(b, `<text class="pt missing" x="%s" y="%s">no ok trial (%d failed): see the failed trials</text>`, f1(c.left), f1(y+26), p.Failed)
		}
		return
	}
	c.bar(i, name, p, y)
	c.trials(p, y)
}

// bar draws p's bar from zero, in series i's colour, with its interval
// as a whisker.
func (c barChart) bar(i int, name string, p figure.Point, y float64) {
	x0, x1 := c.sx.at(0), c.sx.at(p.Y)
	if x1 < x0 {
		x0, x1 = x1, x0
	}
	fmt.Fprintf(c.b, `<a href="#c%d"><rect class="pt bar" x="%s" y="%s" width="%s" height="14" fill="%s"><title>%s: %s %s, %s%s</title></rect></a>`,
		p.CellID, f1(x0), f1(y+15), f1(math.Max(x1-x0, 1)), colour(i), esc(name), report.Sig(p.Y), esc(c.f.Unit), esc(countTitle(p)), intervalTitle(p, c.f.Band))
	if finiteF(p.Lo) && finiteF(p.Hi) {
		xl, xh, yc := c.sx.at(p.Lo), c.sx.at(p.Hi), y+22
		fmt.Fprintf(c.b, `<path class="whisker" d="M%s %sH%sM%s %sV%sM%s %sV%s"/>`, f1(xl), f1(yc), f1(xh), f1(xl), f1(yc-5), f1(yc+5), f1(xh), f1(yc-5), f1(yc+5))
	}
}

// trials draws each of p's trials as a dot on its bar, the flagged ones
// apart, every dot linking to its trial's row.
func (c barChart) trials(p figure.Point, y float64) {
	for _, t := range p.Trials {
		fmt.Fprintf(c.b, `<a href="#t%d"><circle class="trial" cx="%s" cy="%s" r="2.6"><title>trial %d: %s %s</title></circle></a>`,
			t.Seq, f1(c.sx.at(t.Value)), f1(y+22), t.Seq, report.Sig(t.Value), esc(c.f.Unit))
	}
	for _, t := range p.FlaggedTrials {
		if !finiteF(t.Value) {
			continue
		}
		fmt.Fprintf(c.b, `<a href="#t%d"><circle class="trial flagged" cx="%s" cy="%s" r="3"><title>trial %d: %s %s, flagged: not in the statistics</title></circle></a>`,
			t.Seq, f1(c.sx.at(t.Value)), f1(y+22), t.Seq, report.Sig(t.Value), esc(c.f.Unit))
	}
}

// countTitle says what a point is of: "n=3 trials", with the pairs a
// per-pair point is over, the flagged trials set apart, and a warning
// where the interval rests on fewer than three trials.
func countTitle(p figure.Point) string {
	s := fmt.Sprintf("n=%d trials", p.N)
	if p.Copies > 0 {
		s += fmt.Sprintf(" of %d copies", p.Copies)
	}
	if p.Flagged > 0 {
		s += fmt.Sprintf(" (%d flagged, set apart)", p.Flagged)
	}
	if p.FewTrials {
		s += " (n<3: interval from two trials)"
	}
	return s
}

func intervalTitle(p figure.Point, band string) string {
	if !finiteF(p.Lo) || !finiteF(p.Hi) || band == "" {
		return ""
	}
	return fmt.Sprintf(", %s [%s, %s]", band, report.Sig(p.Lo), report.Sig(p.Hi))
}

// drawLines draws lines over x with their interval bands (Lines), or
// step-free CDF curves (CDF).
func drawLines(b *strings.Builder, f figure.Figure) {
	h := 330.0
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, s := range f.Series {
		for _, p := range s.Points {
			xlo, xhi = math.Min(xlo, p.X), math.Max(xhi, p.X)
			for _, v := range []float64{p.Y, p.Lo, p.Hi} {
				if finiteF(v) {
					ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
				}
			}
		}
	}
	if finiteF(f.Ref) {
		ylo, yhi = math.Min(ylo, f.Ref), math.Max(yhi, f.Ref)
	}
	if math.IsInf(xlo, 0) {
		xlo, xhi, ylo, yhi = 0, 1, 0, 1
	}
	nonNegative := true
	for _, s := range f.Series {
		for _, p := range s.Points {
			nonNegative = nonNegative && p.Y >= 0
		}
	}
	switch {
	case f.Kind == figure.CDF:
		ylo, yhi = 0, 1
	case nonNegative && !f.LogY && ylo < 0.5*yhi:
		// Values that cannot be negative start at 0; an interval reaching
		// below is clipped at the axis.
		ylo = 0
	}
	sx, sy := lineScales(f, h, xlo, xhi, ylo, yhi)
	svgOpen(b, h, f.Title)
	axes(b, f, sx, sy, h)
	if finiteF(f.Ref) {
		fmt.Fprintf(b, `<line class="ref" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f1(padL), f1(sy.at(f.Ref)), f1(svgW-padR), f1(sy.at(f.Ref)))
	}
	for _, m := range f.Marks {
		x := f1(sx.at(m.X))
		fmt.Fprintf(b, `<line class="changepoint" x1="%s" y1="%s" x2="%s" y2="%s"><title>%s</title></line>`, x, f1(padTop), x, f1(h-padBot), esc(m.Label))
	}
	for i, s := range f.Series {
		fmt.Fprintf(b, `<g class="series" data-name="%s">`, esc(s.Name))
		c := colour(i)
		if f.Kind == figure.Lines {
			band(b, s, sx, sy, c)
		}
		var d strings.Builder
		for j, p := range s.Points {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, f1(sx.at(p.X)), f1(sy.at(p.Y)))
		}
		cls := "line"
		if f.Kind == figure.CDF {
			cls = "line cdf"
		}
		fmt.Fprintf(b, `<path class="%s" d="%s" stroke="%s"%s/>`, cls, d.String(), c, dash(i))
		if f.Kind == figure.Lines {
			for _, p := range s.Points {
				if p.CellID == 0 { // a cell of another campaign (a history's): no row here to link to
					fmt.Fprintf(b, `<circle class="pt" cx="%s" cy="%s" r="3.2" fill="%s"><title>%s, %s=%s: %s %s, %s%s</title></circle>`,
						f1(sx.at(p.X)), f1(sy.at(p.Y)), c, esc(s.Name), esc(f.XLabel), esc(p.Label), report.Sig(p.Y), esc(f.Unit), esc(countTitle(p)), intervalTitle(p, f.Band))
					continue
				}
				fmt.Fprintf(b, `<a href="#c%d"><circle class="pt" cx="%s" cy="%s" r="3.2" fill="%s"><title>%s, %s=%s: %s %s, %s%s%s</title></circle></a>`,
					p.CellID, f1(sx.at(p.X)), f1(sy.at(p.Y)), c, esc(s.Name), esc(f.XLabel), esc(p.Label), report.Sig(p.Y), esc(f.Unit), esc(countTitle(p)), intervalTitle(p, f.Band), deltaTitle(p))
			}
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
}

// lineScales are a line chart's axes over the data's ranges: log where
// the figure asks (from the smallest positive value), a CDF's x from 0.
func lineScales(f figure.Figure, h, xlo, xhi, ylo, yhi float64) (sx, sy scale) {
	if f.LogX {
		lo, hi := logRange(xlo, xhi)
		sx = scale{lo: lo, hi: hi, p0: padL, p1: svgW - padR, log: true}
	} else {
		lo, hi := xlo, xhi
		if f.Kind == figure.CDF {
			lo, hi = niceRange(math.Min(0, xlo), xhi)
		} else if lo == hi {
			lo, hi = lo-1, hi+1
		}
		sx = scale{lo: lo, hi: hi, p0: padL, p1: svgW - padR}
	}
	if f.LogY {
		// The smallest positive value: an interval reaching 0 or below
		// is clipped at the axis.
		ylo = math.Inf(1)
		for _, s := range f.Series {
			for _, p := range s.Points {
				for _, v := range []float64{p.Y, p.Lo} {
					if v > 0 {
						ylo = math.Min(ylo, v)
					}
				}
			}
		}
		lo, hi := logRange(ylo, yhi)
		sy = scale{lo: lo, hi: hi, p0: h - padBot, p1: padTop, log: true}
	} else {
		ylo, yhi = niceRange(ylo, yhi)
		sy = scale{lo: ylo, hi: yhi, p0: h - padBot, p1: padTop}
	}
	return sx, sy
}

func deltaTitle(p figure.Point) string {
	if p.Delta == "" {
		return ""
	}
	return ", vs baseline " + p.Delta
}

// band shades a series' interval where it has one.
func band(b *strings.Builder, s figure.Series, sx, sy scale, c string) {
	var top, bot []string
	for _, p := range s.Points {
		if !finiteF(p.Lo) || !finiteF(p.Hi) {
			continue
		}
		lo := p.Lo
		if sy.log && lo <= 0 {
			lo = sy.lo
		}
		top = append(top, f1(sx.at(p.X))+" "+f1(sy.at(math.Min(math.Max(p.Hi, sy.lo), sy.hi))))
		bot = append(bot, f1(sx.at(p.X))+" "+f1(sy.at(math.Min(math.Max(lo, sy.lo), sy.hi))))
	}
	if len(top) < 2 {
		return
	}
	for i, j := 0, len(bot)-1; i < j; i, j = i+1, j-1 {
		bot[i], bot[j] = bot[j], bot[i]
	}
	fmt.Fprintf(b, `<path class="band" d="M%sL%sZ" fill="%s"/>`, strings.Join(top, "L"), strings.Join(bot, "L"), c)
}

// axes draws the grid, ticks and axis labels of an x/y chart.
func axes(b *strings.Builder, f figure.Figure, sx, sy scale, h float64) {
	bottom := h - padBot
	for _, t := range sy.ticks() {
		y := sy.at(t)
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`,
			f1(padL), f1(y), f1(svgW-padR), f1(y), f1(padL-5), f1(y+4), tickLabel(t))
	}
	for _, t := range sx.ticks() {
		x := sx.at(t)
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			f1(x), f1(padTop), f1(x), f1(bottom), f1(x), f1(bottom+15), tickLabel(t))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f1(padL), f1(bottom), f1(svgW-padR), f1(bottom))
	xl := f.XLabel
	if f.LogX {
		xl += " (log scale)"
	}
	fmt.Fprintf(b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, f1((padL+svgW-padR)/2), f1(h-8), esc(xl))
	yl := f.YLabel
	if f.LogY {
		yl += " (log)"
	}
	fmt.Fprintf(b, `<text class="axis-label" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`, f1((padTop+bottom)/2), esc(yl))
}

// drawHeat draws a heatmap: one rect per measured entry, coloured by its
// value, with its text.
func drawHeat(b *strings.Builder, f figure.Figure) {
	hm := f.Heat
	const rowH, labelW = 34.0, 150.0
	cols := float64(len(hm.Cols))
	cw := (svgW - labelW - padR) / math.Max(cols, 1)
	h := padTop + 20 + float64(len(hm.Rows))*rowH + 28
	svgOpen(b, h, f.Title)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range hm.Cells {
		for _, c := range r {
			if c != nil {
				lo, hi = math.Min(lo, c.Value), math.Max(hi, c.Value)
			}
		}
	}
	for j, c := range hm.Cols {
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, f1(labelW+cw*(float64(j)+0.5)), f1(padTop+8), esc(c))
	}
	fmt.Fprintf(b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s →</text>`, f1(labelW+(svgW-labelW-padR)/2), f1(h-8), esc(hm.ColLabel))
	if hm.SubLabel != "" {
		fmt.Fprintf(b, `<text class="tick" x="4" y="%s">under each value: its %s</text>`, f1(padTop+8), esc(hm.SubLabel))
	}
	fmt.Fprintf(b, `<g class="series" data-name="%s">`, esc(f.Title))
	for i, rn := range hm.Rows {
		y := padTop + 20 + float64(i)*rowH
		fmt.Fprintf(b, `<text class="bar-label" x="4" y="%s">%s</text>`, f1(y+rowH/2+4), esc(rn))
		if i >= len(hm.Cells) {
			continue
		}
		for j, c := range hm.Cells[i] {
			if c == nil {
				continue
			}
			x := labelW + cw*float64(j)
			fill := heatColour(c.Value, lo, hi, hm.Diverging)
			cls := "pt heat"
			if c.Mark {
				cls += " mark"
			}
			sub := c.Sub
			if sub != "" && hm.SubLabel != "" {
				sub = hm.SubLabel + " " + sub
			}
			fmt.Fprintf(b, `<a href="#c%d"><rect class="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s / %s: %s %s</title></rect></a>`,
				c.CellID, cls, f1(x+1), f1(y+1), f1(cw-2), f1(rowH-2), fill, esc(rn), esc(hm.Cols[j]), esc(c.Text), esc(sub))
			if c.Sub == "" || cw < 60 {
				fmt.Fprintf(b, `<text class="heat-text" x="%s" y="%s" text-anchor="middle">%s</text>`, f1(x+cw/2), f1(y+rowH/2+4), esc(c.Text))
				continue
			}
			fmt.Fprintf(b, `<text class="heat-text" x="%s" y="%s" text-anchor="middle">%s</text><text class="heat-sub" x="%s" y="%s" text-anchor="middle">%s</text>`,
				f1(x+cw/2), f1(y+rowH/2-2), esc(c.Text), f1(x+cw/2), f1(y+rowH/2+10), esc(c.Sub))
		}
	}
	b.WriteString(`</g></svg>`)
}

// heatColour is a diverging red–blue scale around 0 (negative = red =
// worse) or a sequential one from lo to hi.
func heatColour(v, lo, hi float64, diverging bool) string {
	if diverging {
		a := math.Min(math.Abs(v), 1)
		if v < 0 {
			return fmt.Sprintf("rgba(213,94,0,%.2f)", 0.1+0.8*a)
		}
		return fmt.Sprintf("rgba(0,114,178,%.2f)", 0.1+0.8*a)
	}
	t := 0.5
	if hi > lo {
		t = (v - lo) / (hi - lo)
	}
	return fmt.Sprintf("rgba(0,158,115,%.2f)", 0.12+0.78*t)
}

func finiteF(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
