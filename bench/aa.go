package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/report"
)

// aaCompare runs the mixed experiment twice, one campaign after the
// other, with a fixed n, and compares the second with the first as
// `ctrbench compare` does: nothing changed between them, so any verdict
// but "no change" is a false alarm, and an exit status of 1 a CI gate
// failing for nothing. It prints both families' comparisons; the
// simulation behind the rate (at most 5% at any number of metrics) is
// analysis.TestCompareFalseAlarms.
func aaCompare(ctx context.Context, bin string, reps int) error {
	a, err := runBench(ctx, bin, fmt.Sprint(reps))
	if err != nil {
		return err
	}
	b, err := runBench(ctx, bin, fmt.Sprint(reps))
	if err != nil {
		return err
	}
	for _, all := range []bool{false, true} {
		cmp, err := analysis.CompareCampaigns(ctx, a.source, b.source, analysis.CompareQuery{A: a.id, B: b.id, Threshold: 1, AllMetrics: all})
		if err != nil {
			return err
		}
		fmt.Printf("\nA/A: the same experiment twice (n = %d, threshold 1%%), all metrics: %v\n", reps, all)
		if err := report.Compare(os.Stdout, cmp, "table"); err != nil {
			return err
		}
		other := 0
		for _, c := range cmp.Changes {
			if c.Judged && c.Verdict != analysis.NoChange && c.Verdict != analysis.Undetermined {
				other++
			}
		}
		exit := 0
		switch {
		case cmp.Judged == 0:
			exit = 2 // nothing judged: a gate never passes on nothing
		case cmp.Regressed > 0:
			exit = 1
		}
		fmt.Printf("A/A result: %d judged, %d with a verdict other than no change, compare would exit %d (target: 0; a false alarm at most 5%% of the time)\n", cmp.Judged, other, exit)
	}
	return nil
}
