package plan

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/schedule"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Describe writes what a campaign of e would run — its cells with their
// baselines and the trial order its schedule fixes — after resolving every
// cell, so a dry run finds what a run would refuse.
func Describe(w io.Writer, e *spec.Experiment) error {
	cells := e.Cells()
	resolved, err := ResolveAll(e, cells)
	if err != nil {
		return err
	}
	describeTrials(w, e, cells)
	describeProfile(w, e)
	fmt.Fprintln(w, estimateLine(estimateRange(e, resolved)))
	if files := e.HostFiles(); len(files) > 0 {
		fmt.Fprintf(w, "files of this machine it reads (never writes): %s\n", strings.Join(files, "; "))
	}
	if v := e.Envelope; !v.IsZero() || e.VariesMachine() {
		var parts []string
		switch {
		case e.VariesMachine():
			parts = append(parts, "cores by cell ("+vocab.FMachineCPUs+")")
		case v.CPUs > 0:
			parts = append(parts, fmt.Sprintf("%g cores", v.CPUs))
		}
		if v.Cpuset != "" {
			parts = append(parts, "cpuset "+v.Cpuset)
		}
		if v.MemoryBytes > 0 {
			parts = append(parts, vocab.Size(v.MemoryBytes).String())
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
	order := Schedule(e, cells)
	var trials []schedule.Trial
	switch s := order.(type) {
	case schedule.Planner:
		fmt.Fprint(w, "order (cell ids):")
		trials = s.Plan()
	case *schedule.Adaptive:
		fmt.Fprint(w, "order of the first rounds (cell ids; later rounds follow the results):")
		trials = s.Preview()
	}
	for _, pt := range trials {
		mark := ""
		if pt.Warmup {
			mark = "w"
		}
		fmt.Fprintf(w, " %d%s", pt.CellID, mark)
	}
	fmt.Fprintln(w)
	return nil
}

// describeProfile says which profile of the file the plan is for, and the
// overrides applied; or, when none is, which profiles the file has.
func describeProfile(w io.Writer, e *spec.Experiment) {
	name, sets := e.Profile()
	switch {
	case name != "":
		fmt.Fprintf(w, "profile %s; overrides applied, the profile's then --set's: %s\n", name, strings.Join(sets, ", "))
	case len(e.Profiles()) > 0:
		fmt.Fprintf(w, "profile: none (the file's profiles, chosen with --profile NAME: %s)\n", strings.Join(e.Profiles(), ", "))
	}
}

// estimateRange estimates the campaign's duration: every cell runs its
// warm-ups and repetitions; with adaptive repetition, the fewest and the
// most it may.
func estimateRange(e *spec.Experiment, cells []*Cell) (lo, hi estimate) {
	fewest, most, cpus := map[int]int{}, map[int]int{}, map[int]int{}
	for _, c := range cells {
		fewest[c.ID], most[c.ID] = e.Repetitions+e.Warmup, e.Repetitions+e.Warmup
		if a := e.Adaptive; a != nil {
			fewest[c.ID], most[c.ID] = a.Min+e.Warmup, a.Max+e.Warmup
		}
		cpus[c.ID] = boundCPUs(e, c)
	}
	return estimateOf(cells, fewest, cpus), estimateOf(cells, most, cpus)
}

// describeTrials is the plan's first line: the cells, the trials and the
// order's seed, and with adaptive repetition, its rule.
func describeTrials(w io.Writer, e *spec.Experiment, cells []result.Cell) {
	if a := e.Adaptive; a != nil {
		metric := "each workload's first metric"
		if a.Metric != "" {
			metric = a.Metric
		}
		fmt.Fprintf(w, "experiment %s: %d cells x (%d to %d repetitions + %d warm-up) = %d to %d trials, seed %d, timeout %s per trial\n",
			e.Name, len(cells), a.Min, a.Max, e.Warmup, len(cells)*(a.Min+e.Warmup), len(cells)*(a.Max+e.Warmup), e.Seed, e.Timeout)
		fmt.Fprintf(w, "adaptive: after %d, more rounds for the cells whose 95%% interval of %s is wider than ±%g%% of the mean, up to %d",
			a.Min, metric, a.RCI*100, a.Max)
		if e.Budget > 0 {
			fmt.Fprintf(w, " or until the trials have taken %s", e.Budget)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "experiment %s: %d cells x (%d repetitions + %d warm-up) = %d trials, seed %d, timeout %s per trial\n",
			e.Name, len(cells), e.Repetitions, e.Warmup, len(cells)*(e.Repetitions+e.Warmup), e.Seed, e.Timeout)
	}
}

// Schedule is the campaign's scheduler: rounds of seeded random
// permutations of the cells (schedule.Interleaved), or with adaptive
// repetition, rounds of the cells still short of their target
// (schedule.Adaptive), each cell decided by its workload's headline metric
// or the one the file names.
func Schedule(e *spec.Experiment, cells []result.Cell) schedule.Scheduler {
	ids := make([]int, len(cells))
	for i, c := range cells {
		ids[i] = c.ID
	}
	a := e.Adaptive
	if a == nil {
		return schedule.NewInterleaved(ids, e.Repetitions, e.Warmup, e.Seed)
	}
	decides := map[int]schedule.Decider{}
	for _, c := range cells {
		if m := DecidingMetric(e, c); m != "" {
			decides[c.ID] = func(o result.Observation) bool {
				id := o.ID()
				return id.Metric == m && id.Kind == result.KindMeasure && id.Role == "" &&
					(id.Scope == result.ScopeTrial || id.Scope == result.ScopeAggregate)
			}
		}
	}
	return schedule.NewAdaptive(schedule.AdaptiveConfig{Cells: ids, Warmup: e.Warmup, Min: a.Min, Max: a.Max,
		RCI: a.RCI, Budget: e.Budget, Seed: e.Seed, Decides: decides})
}

// DecidingMetric is the metric whose interval decides when an adaptive
// cell has enough trials: the one the file names, else the workload's
// first.
func DecidingMetric(e *spec.Experiment, c result.Cell) string {
	if e.Adaptive != nil && e.Adaptive.Metric != "" {
		return e.Adaptive.Metric
	}
	if ms := workload.MetricsOf(c.WorkloadType, c.Params); len(ms) > 0 {
		return ms[0].Name
	}
	return ""
}
