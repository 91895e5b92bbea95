package plan

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/schedule"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Describe writes what a campaign of e would run — its cells with their
// baselines and the trial order sched fixes — after resolving every cell,
// so a dry run finds what a run would refuse.
func Describe(w io.Writer, e *spec.Experiment, sched schedule.Planner) error {
	cells := e.Cells()
	if _, err := ResolveAll(e, cells); err != nil {
		return err
	}
	fmt.Fprintf(w, "experiment %s: %d cells x (%d repetitions + %d warm-up) = %d trials, seed %d, timeout %s per trial\n",
		e.Name, len(cells), e.Repetitions, e.Warmup, len(cells)*(e.Repetitions+e.Warmup), e.Seed, e.Timeout)
	if v := e.Envelope; !v.IsZero() {
		var parts []string
		if v.CPUs > 0 {
			parts = append(parts, fmt.Sprintf("%g cores", v.CPUs))
		}
		if v.Cpuset != "" {
			parts = append(parts, "cpuset "+v.Cpuset)
		}
		if v.MemoryBytes > 0 {
			parts = append(parts, workload.FormatSize(v.MemoryBytes))
		}
		fmt.Fprintf(w, "emulated machine: %s (every instance runs inside one cgroup with these limits)\n", strings.Join(parts, ", "))
	}
	for _, c := range cells {
		base := ""
		if id, ok := e.BaselineOf(c, cells); ok {
			if id == c.ID {
				base = "  (baseline)"
			} else {
				base = fmt.Sprintf("  (baseline: cell %d)", id)
			}
		}
		fmt.Fprintf(w, "  cell %2d  %-12s %s%s\n", c.ID, c.Workload, result.FactorString(c.Factors), base)
	}
	fmt.Fprint(w, "order (cell ids):")
	for _, pt := range sched.Plan() {
		mark := ""
		if pt.Warmup {
			mark = "w"
		}
		fmt.Fprintf(w, " %d%s", pt.CellID, mark)
	}
	fmt.Fprintln(w)
	return nil
}

// Schedule is the campaign's scheduler: today, rounds of seeded random
// permutations of the cells (schedule.Interleaved).
func Schedule(e *spec.Experiment, cells []result.Cell) *schedule.Interleaved {
	ids := make([]int, len(cells))
	for i, c := range cells {
		ids[i] = c.ID
	}
	return schedule.NewInterleaved(ids, e.Repetitions, e.Warmup, e.Seed)
}
