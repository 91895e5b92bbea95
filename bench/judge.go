package main

import (
	"fmt"

	"github.com/ctrbench/ctrbench/internal/stats"
)

// judged is one comparison's line: the means, their ratio with its 95%
// interval, the target and whether the ratio met it.
type judged struct {
	ours, ref       float64 // means
	ratio           float64
	ci              string // the ratio's 95% interval, "-" when undefined
	target, verdict string
}

// judge compares ours with the reference: the ratio of their means must be
// at least min (throughput) or at most max (latency, time); both 0: the
// ratio is reported only.
func judge(ours, ref []float64, min, max float64) judged {
	so, sr := stats.Summarize(ours), stats.Summarize(ref)
	j := judged{ours: so.Mean, ref: sr.Mean, ratio: so.Mean / sr.Mean, ci: "-", target: "-", verdict: "reported"}
	if c, ok := stats.Compare(ours, ref); ok && c.Defined {
		j.ci = fmt.Sprintf("[%.3f, %.3f]", 1+c.CI95[0]/100, 1+c.CI95[1]/100)
	}
	switch {
	case min > 0:
		j.target, j.verdict = fmt.Sprintf(">= %.2f", min), "met"
		if j.ratio < min {
			j.verdict = fmt.Sprintf("MISSED by %.1f%%", 100*(min-j.ratio)/min)
		}
	case max > 0:
		j.target, j.verdict = fmt.Sprintf("<= %.2f", max), "met"
		if j.ratio > max {
			j.verdict = fmt.Sprintf("MISSED by %.1f%%", 100*(j.ratio-max)/max)
		}
	}
	return j
}
