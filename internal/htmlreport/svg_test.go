package htmlreport

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/figure"
)

func TestNiceTicksAndLabels(t *testing.T) {
	if got := niceTicks(0, 20, 5); !reflect.DeepEqual(got, []float64{0, 5, 10, 15, 20}) {
		t.Errorf("niceTicks(0, 20) = %v", got)
	}
	if lo, hi := niceRange(0.3, 9.2); lo != 0 || hi != 10 {
		t.Errorf("niceRange(0.3, 9.2) = %v, %v", lo, hi)
	}
	s := scale{lo: 1, hi: 1000, p0: 0, p1: 300, log: true}
	if got := s.ticks(); !reflect.DeepEqual(got, []float64{1, 10, 100, 1000}) || s.at(10) != 100 {
		t.Errorf("log ticks %v, at(10) = %v", got, s.at(10))
	}
	for v, want := range map[float64]string{0: "0", 1500: "1500", 25000: "25k", 3e6: "3M", 0.001: "0.001", 2.5e9: "2.5G"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// pt is a point with an interval and two trials.
func pt(x, y float64) figure.Point {
	return figure.Point{X: x, Label: fmt.Sprint(x), Y: y, Lo: y * 0.9, Hi: y * 1.1, N: 2, CellID: 1,
		Trials: []figure.TrialValue{{Seq: 1, Value: y * 0.95}, {Seq: 2, Value: y * 1.05}}}
}

// Every kind of figure draws as many points as it has, each a number, and
// a value without an interval (NaN) or a cell without trials draws no
// non-number.
func TestDrawnPointsMatchTheFigure(t *testing.T) {
	noCI := pt(3, 7)
	noCI.Lo, noCI.Hi = math.NaN(), math.NaN()
	failed := figure.Point{Label: "failed", Y: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Failed: 3}
	figs := []figure.Figure{
		{ID: "b", Kind: figure.Bars, Ref: math.NaN(), Series: []figure.Series{{Name: "a", Points: []figure.Point{pt(0, 5), noCI, failed}}, {Name: "b", Points: []figure.Point{pt(0, -2)}}}},
		{ID: "l", Kind: figure.Lines, LogX: true, LogY: true, Ref: 1, Series: []figure.Series{{Name: "a", Points: []figure.Point{pt(10, 1), pt(100, 50), pt(1000, 900)}}, {Name: "b", Points: []figure.Point{pt(10, 2), noCI}}}},
		{ID: "c", Kind: figure.CDF, LogX: true, Ref: math.NaN(), Series: []figure.Series{{Name: "a", Points: []figure.Point{{X: 0.1, Y: 0}, {X: 0.5, Y: 0.5}, {X: 9, Y: 1}}}}},
		{ID: "h", Kind: figure.Heatmap, Ref: math.NaN(), Heat: &figure.Heat{Rows: []string{"r1", "r2"}, Cols: []string{"c1", "c2"}, Diverging: true,
			Cells: [][]*figure.HeatCell{{{Value: -0.3, Text: "-0.3", Mark: true}, nil}, {{Value: 0.1, Text: "0.1"}, {Value: -2, Text: "-2"}}}}},
	}
	for _, f := range figs {
		svg, legend := drawFigure(f)
		page := fmt.Sprintf(`<figure class="fig" id="%s" data-kind="%s" data-points="%d">%s%s</figure>`, f.ID, f.Kind, f.Points(), svg, legend)
		out, err := Outline(strings.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "MISMATCH") || strings.Contains(out, "BAD NUMBER") || !strings.Contains(out, fmt.Sprintf("points=%d", f.Points())) {
			t.Errorf("figure %s (%d points):\n%s", f.ID, f.Points(), out)
		}
	}
}

func TestHeatColour(t *testing.T) {
	if !strings.HasPrefix(heatColour(-0.5, 0, 0, true), "rgba(213,94,0,") || !strings.HasPrefix(heatColour(0.5, 0, 0, true), "rgba(0,114,178,") {
		t.Error("diverging: negative (worse) is red, positive blue")
	}
	if heatColour(1, 1, 1, false) == "" || heatColour(0, 0, 10, false) == heatColour(10, 0, 10, false) {
		t.Error("sequential: the scale must vary from lo to hi")
	}
}

// Issue 24: flagged trials are drawn apart from the statistics (dashed),
// the tooltip says how many trials a point is of and warns below three,
// and a cell whose every trial was flagged says so instead of "failed".
func TestFlaggedAndFewTrialsDrawn(t *testing.T) {
	p := pt(0, 5)
	p.Flagged, p.FewTrials = 1, true
	p.FlaggedTrials = []figure.TrialValue{{Seq: 9, Value: 9}}
	all := figure.Point{Label: "all flagged", Y: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Flagged: 3}
	svg, _ := drawFigure(figure.Figure{ID: "b", Kind: figure.Bars, Ref: math.NaN(), Series: []figure.Series{{Name: "a", Points: []figure.Point{p, all}}}})
	for _, want := range []string{`class="trial flagged"`, "trial 9: 9.000 , flagged: not in the statistics", "n=2 trials (1 flagged, set apart) (n&lt;3: interval from two trials)",
		"no trial ran as planned (3 flagged, 0 failed)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the bars lack %q:\n%s", want, svg)
		}
	}
}
