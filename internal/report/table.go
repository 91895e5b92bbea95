package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// Table writes one aligned table per (workload, metric), then a line that
// explains the intervals.
func Table(w io.Writer, rows []analysis.Row) error {
	if len(rows) == 0 {
		if _, err := fmt.Fprintln(w, "(no results)"); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		return nil
	}
	groups := groupRows(rows)
	multi := manyCampaigns(rows)
	for i, g := range groups {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return fmt.Errorf("write table: %w", err)
			}
		}
		if err := writeGroup(w, g, multi); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "\n%s\n", legend(rows)); err != nil {
		return fmt.Errorf("write table legend: %w", err)
	}
	return nil
}

// groupRows splits rows by (campaign, workload, metric) in order of first
// appearance, keeping each group's rows in their given order.
func groupRows(rows []analysis.Row) [][]analysis.Row {
	idx := map[[3]string]int{}
	var groups [][]analysis.Row
	for _, r := range rows {
		k := [3]string{r.Campaign, r.Workload, r.Metric}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return groups
}

func manyCampaigns(rows []analysis.Row) bool {
	for _, r := range rows[1:] {
		if r.Campaign != rows[0].Campaign {
			return true
		}
	}
	return false
}

func writeGroup(w io.Writer, rows []analysis.Row, withCampaign bool) error {
	if _, err := fmt.Fprintln(w, heading(rows[0], withCampaign)); err != nil {
		return fmt.Errorf("write table heading: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range groupCells(rows) {
		if _, err := fmt.Fprintln(tw, strings.Join(l, "\t")); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// groupCells is one (workload, metric) group as lines of cells, the
// column names first: what the table aligns and Markdown pipes.
func groupCells(rows []analysis.Row) [][]string {
	factors := factorNames(rows)
	showFailed, showIR, showFlagged, showOutliers, showTarget, showSlowdown := false, false, false, false, false, false
	for _, r := range rows {
		showSlowdown = showSlowdown || r.Slowdown != nil
		showTarget = showTarget || r.TargetRCIPct != nil
		showFailed = showFailed || r.Failed != 0
		showFlagged = showFlagged || r.Flagged != 0
		showIR = showIR || r.IR != nil
		showOutliers = showOutliers || len(r.Outliers) > 0
	}
	cols := append(append([]string{}, factors...), "n", "mean", "sd", "rsd%", "95% CI", "vs baseline")
	if showTarget {
		cols = append(cols, "precision (target)")
	}
	if showSlowdown {
		cols = append(cols, "slowdown [95% CI]")
	}
	if showIR {
		cols = append(cols, "IR [95% CI]")
	}
	if showFailed {
		cols = append(cols, "failed")
	}
	if showFlagged {
		cols = append(cols, "flagged (excluded)")
	}
	if showOutliers {
		cols = append(cols, "outliers (kept)")
	}
	lines := [][]string{cols}
	for _, r := range rows {
		cells := make([]string, 0, len(cols))
		for _, f := range factors {
			cells = append(cells, r.Cell[f])
		}
		mean := Sig(r.Mean)
		if r.NotComparable != "" {
			mean += "†"
		}
		ci := interval(r.CI95, Sig)
		if r.FewTrials {
			ci += " (n<3)"
		}
		cells = append(cells, strconv.Itoa(r.N), mean, Sig(r.SD), Sig(r.RSDPct), ci, vsBaseline(r))
		if showTarget {
			cells = append(cells, precision(r))
		}
		if showSlowdown {
			cells = append(cells, slowdownCell(r))
		}
		if showIR {
			cells = append(cells, irCell(r))
		}
		if showFailed {
			cells = append(cells, strconv.Itoa(r.Failed))
		}
		if showFlagged {
			cells = append(cells, flaggedCell(r))
		}
		if showOutliers {
			cells = append(cells, outlierSeqs(r))
		}
		lines = append(lines, cells)
	}
	return lines
}

// heading reads like "cpu (cpu.primes) — events_per_sec [events/s], higher is better".
func heading(r analysis.Row, withCampaign bool) string {
	var b strings.Builder
	if withCampaign {
		b.WriteString(r.Campaign + ": ")
	}
	b.WriteString(r.Workload)
	if r.WorkloadType != "" {
		b.WriteString(" (" + r.WorkloadType + ")")
	}
	b.WriteString(" — " + r.Metric)
	if r.Unit != "" {
		b.WriteString(" [" + r.Unit + "]")
	}
	if r.Better.Valid() {
		b.WriteString(", " + string(r.Better) + " is better")
	}
	return b.String()
}

func interval(ci [2]float64, f func(float64) string) string {
	if !finite(ci[0]) || !finite(ci[1]) {
		return "-"
	}
	return "[" + f(ci[0]) + ", " + f(ci[1]) + "]"
}

// irCell renders "-0.482 [-0.51, -0.45] *": IR, its interval, and a star
// when the interval excludes 0.
func irCell(r analysis.Row) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	switch {
	case r.IR == nil:
		return "-"
	case r.IRCI95 == nil:
		return f(*r.IR) + " (" + r.VsBaselineNote + ")"
	}
	s := f(*r.IR) + " [" + f(r.IRCI95[0]) + ", " + f(r.IRCI95[1]) + "]"
	if r.IRExcludes0 != nil && *r.IRExcludes0 {
		s += " *"
	}
	return s
}

// slowdownCell is S1's slowdown: "2.01x [1.95, 2.07]".
func slowdownCell(r analysis.Row) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	switch {
	case r.Slowdown == nil:
		return "-"
	case r.SlowdownCI95 == nil:
		return f(*r.Slowdown) + "x (no variance)"
	}
	return f(*r.Slowdown) + "x [" + f(r.SlowdownCI95[0]) + ", " + f(r.SlowdownCI95[1]) + "]"
}

func vsBaseline(r analysis.Row) string {
	var s string
	switch {
	case r.Baseline:
		return "(baseline)"
	case r.VsBaselinePct != nil:
		s = signed(*r.VsBaselinePct) + "%"
		if r.VsBaselineCI95 != nil {
			s += " " + interval(*r.VsBaselineCI95, signed)
		}
	case r.VsBaselineDiff != nil:
		// No ratio to a baseline of 0: the difference itself, in the
		// metric's unit.
		s = signed(*r.VsBaselineDiff) + " " + r.Unit
		if r.VsBaselineDiffCI95 != nil {
			s += " " + interval(*r.VsBaselineDiffCI95, signed)
		}
	default:
		return "-"
	}
	if r.Significant != nil && *r.Significant {
		s += " *"
	}
	if r.VsBaselineNote != "" {
		s += " (" + r.VsBaselineNote + ")"
	}
	if r.BelowNoiseFloor != nil && *r.BelowNoiseFloor {
		s += " (below this machine's MDE " + Sig(*r.MDEPct) + "%)"
	}
	return s
}

// flaggedCell renders the trials set apart: "2, mean 0.719", or "0".
func flaggedCell(r analysis.Row) string {
	if r.Flagged == 0 || r.FlaggedMean == nil {
		return strconv.Itoa(r.Flagged)
	}
	return strconv.Itoa(r.Flagged) + ", mean " + Sig(*r.FlaggedMean)
}

// precision renders an adaptive cell's interval half-width against its
// target: "±1.8% ≤ 2% reached" or "±3.1% > 2% not reached".
func precision(r analysis.Row) string {
	if r.TargetRCIPct == nil {
		return ""
	}
	t := strconv.FormatFloat(*r.TargetRCIPct, 'g', 4, 64) + "%"
	if r.RCIPct == nil {
		return "- (" + t + ") not reached"
	}
	got := "±" + Sig(*r.RCIPct) + "%"
	if r.Reached != nil && *r.Reached {
		return got + " ≤ " + t + " reached"
	}
	return got + " > " + t + " not reached"
}

// outlierSeqs renders the trials flagged as outliers: "seq 12, 40".
func outlierSeqs(r analysis.Row) string {
	if len(r.Outliers) == 0 {
		return ""
	}
	parts := make([]string, len(r.Outliers))
	for i, s := range r.Outliers {
		parts[i] = strconv.Itoa(s)
	}
	return "seq " + strings.Join(parts, ", ")
}

// legend explains the columns, naming every interval method that was used.
func legend(rows []analysis.Row) string {
	s := "CI: 95% interval of the mean (Student t; for a metric bounded below, such as a rate or a time, on the log scale, and for one bounded on both sides, such as a percentage or an index, on the logit scale, so it stays in range)"
	var methods []string
	seen := map[string]bool{}
	outliers, slowdown, few, flagged, twoStage, mde := false, false, false, false, false, false
	for _, r := range rows {
		if m := r.VsBaselineMethod; m != "" && !seen[m] {
			seen[m] = true
			methods = append(methods, m)
		}
		outliers = outliers || len(r.Outliers) > 0
		slowdown = slowdown || r.Slowdown != nil
		few = few || r.FewTrials
		flagged = flagged || r.Flagged > 0
		twoStage = twoStage || r.TargetRCIPct != nil
		mde = mde || r.BelowNoiseFloor != nil && *r.BelowNoiseFloor
	}
	if twoStage {
		s += "; adaptive campaign (two-stage): the wider of Stein's interval (the first stage's variance) and Student's of all trials"
	}
	if len(methods) > 0 {
		s += "; vs baseline: difference of means relative to |baseline|, 95% interval by " +
			strings.Join(methods, " or ") + "; * = interval excludes 0 (p < 0.05 by the same statistic)"
	}
	if slowdown {
		s += "; slowdown (S1): one instance's time for its work against the baseline's (rates inverted), each trial's mean over its instances; 1x = no change"
	}
	if outliers {
		s += "; outliers: trials the generalized ESD test (Rosner) flags at 5% — a cell of pure noise gets a flag at most 5% of the time; looked for from 3 trials; kept in every statistic"
	}
	if flagged {
		s += "; flagged (excluded): ok trials whose conditions were not as planned (the reason is stored with each), in no statistic of the row; their mean is shown apart"
	}
	if few {
		s += "\n(n<3): an interval from two trials rests on one degree of freedom (t = 12.7) and on the trials being normal: too wide to say much; run more repetitions"
	}
	if mde {
		s += "\nMDE: the smallest difference this machine's calibration says a comparison of these n trials detects with 80% power; a difference below it may be significant, but this machine cannot be trusted to show it"
	}
	var why []string
	for _, r := range rows {
		if r.NotComparable != "" && !slices.Contains(why, r.NotComparable) {
			why = append(why, r.NotComparable)
		}
	}
	for _, w := range why {
		s += "\n† not comparable with any other row — " + w
	}
	return s
}
