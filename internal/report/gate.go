package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// NothingJudged says why a comparison judged no metric, which a gate
// must not pass on: no cell in common (naming what each campaign ran),
// or cells in common without a metric of the family.
func NothingJudged(c analysis.Comparison) string {
	if c.Common == 0 {
		return fmt.Sprintf("no cells in common, so nothing was judged: A %s ran %s; B %s ran %s "+
			"(a factor with one level throughout each campaign is a setting and the cells are matched without it; one with several levels is part of each cell's identity)",
			c.A.ID, designText(c.DesignA), c.B.ID, designText(c.DesignB))
	}
	return fmt.Sprintf("nothing was judged: the %d cell(s) both ran have no metric of the family in common (%s)", c.Common, familyName(c.Family))
}

// designText is what a campaign ran: "tcp (4 cells: platform=docker|native
// cpus=0.5|1), cpu (1 cell: no factor)".
func designText(d []analysis.WorkloadDesign) string {
	if len(d) == 0 {
		return "no cell with a measured trial"
	}
	parts := make([]string, len(d))
	for i, w := range d {
		levels := make([]string, len(w.Factors))
		for j, f := range w.Factors {
			levels[j] = f.Factor + "=" + strings.Join(f.Levels, "|")
		}
		factors := strings.Join(levels, " ")
		if factors == "" {
			factors = "no factor"
		}
		parts[i] = fmt.Sprintf("%s (%s: %s)", w.Workload, plural(w.Cells, "cell"), factors)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// SettingChange is a setting difference as compare shows it:
// `cpus: A (not a factor), B "0.5" (workload tcp)`.
func SettingChange(d analysis.SettingDifference) string {
	level := func(l string) string {
		if l == "" {
			return "(not a factor)"
		}
		return strconv.Quote(l)
	}
	noun := "workload"
	if len(d.Workloads) > 1 {
		noun = "workloads"
	}
	return fmt.Sprintf("%s: A %s, B %s (%s %s)", d.Factor, level(d.A), level(d.B), noun, strings.Join(d.Workloads, ", "))
}

// writeSettings lists the settings that differ, under the environment's
// differences; nothing when none do.
func writeSettings(w io.Writer, diffs []analysis.SettingDifference) error {
	if len(diffs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "settings differ (one level throughout each campaign, not part of a cell's identity: the cells are matched on their other factors, and a change may come from these; --strict-design refuses them):")
	for _, d := range diffs {
		if _, err := fmt.Fprintf(w, "  %s\n", SettingChange(d)); err != nil {
			return err
		}
	}
	return nil
}
