package report

import (
	"math"
	"strconv"
)

// Sig formats v with 4 significant digits in plain decimal notation, so
// columns read as ordinary numbers: 123456.7 prints as 123500, not as
// 1.235e+05 (%g's habit), and 1 as 1.000 so precision is visible. Only
// magnitudes below 1e-4 (where %g also switches) or from 1e12 on, where
// runs of zeros stop being readable, use scientific notation. NaN and Inf
// print as "-".
func Sig(v float64) string {
	switch {
	case !finite(v):
		return "-"
	case v == 0:
		return "0"
	}
	// Round to 4 significant digits first: rounding can carry into a new
	// decade (9.9996 -> 10.00), which changes how many decimals to show.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	mag := math.Abs(r)
	if mag >= 1e12 || mag < 1e-4 {
		return strconv.FormatFloat(r, 'g', 4, 64)
	}
	decimals := max(3-int(math.Floor(math.Log10(mag))), 0)
	return strconv.FormatFloat(r, 'f', decimals, 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// signed is sig with an explicit + for positive values, for differences.
func signed(v float64) string {
	s := Sig(v)
	if finite(v) && v > 0 {
		return "+" + s
	}
	return s
}

// finitePtr is v, or nil (JSON null) when v is NaN or infinite.
func finitePtr(v float64) *float64 {
	if !finite(v) {
		return nil
	}
	return &v
}
