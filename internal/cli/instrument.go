package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/campaign"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
)

func newCalibrateCmd() *cobra.Command {
	var (
		sets    []string
		profile string
		dbPath  string
		reps    int
		format  string
		eng     engineFlags
	)
	c := &cobra.Command{
		Use:   "calibrate FILE",
		Short: "Measure this machine's noise floor for an experiment: its baseline cells run twice (A/A)",
		Long: "calibrate runs each workload's baseline cell of the experiment as two identical cells, A and B,\n" +
			"interleaved, and reports per metric the variation of one trial, the A/A difference (which should\n" +
			"include 0), the false-positive rate of ctrbench's comparison on this machine and the minimum\n" +
			"detectable effect. The calibration is stored; reports of the experiment's campaigns on this machine\n" +
			"then mark differences below the noise floor.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" {
				return usageError{fmt.Errorf("--format %q: table or json", format)}
			}
			m := machine()
			engine := eng.apply()
			e, err := loadExperiment(spec.Options{Profile: profile, Sets: sets, Machine: m}, args[0])
			if err != nil {
				return err
			}
			printNotes(cmd.ErrOrStderr(), e)
			binary, err := os.Executable()
			if err != nil {
				return err
			}
			db, err := store.Open(cmd.Context(), dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			out, err := campaign.Calibrate(cmd.Context(), db, campaign.Options{Experiment: e, Machine: m, Binary: binary,
				Stderr: cmd.ErrOrStderr(), TTY: isTerminal(cmd.ErrOrStderr()), Engine: engine}, reps)
			if err != nil {
				return interruptedOr(err, out, dbPath)
			}
			cal, err := analysis.LoadCalibration(cmd.Context(), db, out.Campaign.ID)
			if err != nil {
				return err
			}
			return report.Calibration(cmd.OutOrStdout(), cal, e.Repetitions, format)
		},
	}
	f := c.Flags()
	f.StringVar(&profile, "profile", "", "apply a profile of the file (its profiles: key) before the --set overrides")
	f.StringArrayVar(&sets, "set", nil, "override a value of the file: path=value (repeatable)")
	f.StringVar(&dbPath, "db", DefaultDB, "results database (SQLite)")
	f.IntVar(&reps, "repetitions", 0, "trials of each of A and B (default: 5 × the file's repetitions, at least 5: five pairs of blocks for the false-positive rate)")
	f.StringVar(&format, "format", "table", "table or json")
	eng.register(f)
	return c
}

func newCompareCmd() *cobra.Command {
	var (
		dbPath, dbB, threshold, format, summary  string
		all, allMetrics, strictEnv, strictDesign bool
	)
	c := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two campaigns cell by cell: change per metric with its interval and a verdict; exit 1 on a regression",
		Long: "compare matches the cells of campaigns A and B by workload and factor levels and judges, for each\n" +
			"workload's headline metric (every measured metric with --all-metrics), how B changed against A with\n" +
			"its 95% interval. Holm's method controls the error over everything judged: two identical campaigns\n" +
			"get any verdict but \"no change\" at most 5% of the time, however many metrics. A change is regressed or\n" +
			"improved when it is significant after that correction and its whole interval is beyond --threshold;\n" +
			"within threshold when significant but not; no change otherwise; undetermined without variance.\n" +
			"The exit status is 1 when any metric regressed, so a CI can gate on it (a new Docker, runtime or\n" +
			"kernel against the last good campaign), and 2 when nothing was judged (no cells in common): a gate\n" +
			"never passes on nothing. A factor with one level throughout each campaign (a --set 'factors.cpus=[0.5]')\n" +
			"is a setting, not part of a cell's identity: the cells are matched on their other factors and the\n" +
			"settings that differ are shown; --strict-design refuses them (exit 2). Differences in the environment\n" +
			"fingerprint are shown; --strict-env refuses them (exit 2).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			th, err := strconv.ParseFloat(strings.TrimSuffix(threshold, "%"), 64)
			if err != nil || th < 0 {
				return usageError{fmt.Errorf("--threshold %q: a percentage such as 1%%", threshold)}
			}
			if format != "table" && format != "json" && format != "junit" {
				return usageError{fmt.Errorf("--format %q: table, json or junit", format)}
			}
			a, err := openResults(cmd.Context(), dbPath)
			if err != nil {
				return err
			}
			defer a.Close()
			b := a
			if dbB != "" {
				if b, err = openResults(cmd.Context(), dbB); err != nil {
					return err
				}
				defer b.Close()
			}
			cmp, err := analysis.CompareCampaigns(cmd.Context(), a, b, analysis.CompareQuery{A: args[0], B: args[1], Threshold: th, All: all, AllMetrics: allMetrics})
			if err != nil {
				return err
			}
			if err := refuseUnlike(cmp, strictEnv, strictDesign); err != nil {
				return err
			}
			if err := report.Compare(cmd.OutOrStdout(), cmp, format); err != nil {
				return err
			}
			if summary != "" {
				if err := appendSummary(summary, cmp); err != nil {
					return err
				}
			}
			return gate(cmp)
		},
	}
	f := c.Flags()
	f.StringVar(&dbPath, "db", DefaultDB, "results database (SQLite) holding A (and B)")
	f.StringVar(&dbB, "db-b", "", "another database holding B")
	f.StringVar(&threshold, "threshold", "1%", "noise threshold: a change smaller than this is not a regression")
	f.StringVar(&format, "format", "table", "table, json or junit (one test case per judged metric, failed where it regressed)")
	f.StringVar(&summary, "summary", os.Getenv("GITHUB_STEP_SUMMARY"), "append the verdict as Markdown to this file (default: $GITHUB_STEP_SUMMARY, a GitHub Actions job's summary page, when set)")
	f.BoolVar(&all, "all", false, "also show telemetry and each pair's own results (not judged: they explain a change)")
	f.BoolVar(&allMetrics, "all-metrics", false, "judge every measured metric, not only each workload's headline (a larger family, the same 5% error)")
	f.BoolVar(&strictEnv, "strict-env", false, "refuse (exit 2) campaigns whose kernel, CPU or its tuning (governor, boost, SMT, mitigations, THP), hypervisor, cgroup version, memory, OS or engine differ")
	f.BoolVar(&strictDesign, "strict-design", false, "refuse (exit 2) campaigns whose settings differ (a factor of one level throughout each, such as cpus=0.5 in B and not a factor of A) instead of matching their cells on the other factors")
	return c
}

// refuseUnlike refuses, as a usage error, a comparison of campaigns whose
// machine or engine (--strict-env) or settings (--strict-design) differ.
func refuseUnlike(cmp analysis.Comparison, strictEnv, strictDesign bool) error {
	if d := cmp.StrictEnvDiffs(); strictEnv && len(d) > 0 {
		var parts []string
		for _, x := range d {
			parts = append(parts, fmt.Sprintf("%s %q in A, %q in B", x.Key, x.A, x.B))
		}
		return usageError{fmt.Errorf("--strict-env: %s and %s ran on different machines or engines (%s); compare them without --strict-env to see the changes anyway",
			cmp.A.ID, cmp.B.ID, strings.Join(parts, "; "))}
	}
	if strictDesign && len(cmp.Settings) > 0 {
		var parts []string
		for _, d := range cmp.Settings {
			parts = append(parts, report.SettingChange(d))
		}
		return usageError{fmt.Errorf("--strict-design: %s and %s ran with different settings (%s); compare them without --strict-design to match their cells on the other factors",
			cmp.A.ID, cmp.B.ID, strings.Join(parts, "; "))}
	}
	return nil
}

// gate is compare's exit status: 2 when nothing was judged, 1 when a
// metric regressed, 0 otherwise.
func gate(cmp analysis.Comparison) error {
	switch {
	case cmp.Judged == 0:
		return withCode(ExitInvalidInput, errors.New(report.NothingJudged(cmp)))
	case cmp.Regressed > 0:
		return withCode(ExitError, fmt.Errorf("%d metric(s) of %s regressed beyond ±%g%% against %s", cmp.Regressed, cmp.B.ID, cmp.Threshold, cmp.A.ID))
	}
	return nil
}

// interruptedOr turns a run's interruption into the message run gives.
func interruptedOr(err error, out campaign.Outcome, db string) error {
	removed := "everything it created was removed"
	if len(out.Summary.CleanupErrors) > 0 {
		removed = leftBehind(out.Summary.CleanupErrors, out.Campaign.ID)
	}
	// Trials that finished while the results file was locked and were
	// never recorded: resume runs them again.
	held := ""
	if n := out.Summary.Held; n > 0 {
		held = fmt.Sprintf(" (%d more finished while the results file was locked by another process and were not recorded: resume runs them again)", n)
	}
	if errors.Is(err, campaign.ErrInterrupted) {
		var (
			stopped *orchestrator.Stopped
			locked  *orchestrator.LockStopped
			file    *store.LockedError
		)
		switch {
		case errors.As(err, &locked) && errors.As(err, &file):
			return withCode(ExitError, fmt.Errorf("the results file %s stayed locked by another process for %s (%s), so the campaign stopped after %d of %d trials, every one recorded%s; %s; end that process's transaction (or the process), then: ctrbench run --db %s --resume %s",
				file.Path, locked.Waited.Round(time.Second), file.Holder, out.Summary.Ran, out.Summary.Planned, held, removed, db, out.Campaign.ID))
		case errors.As(err, &stopped):
			return withCode(ExitError, fmt.Errorf("%v; the campaign stopped after %d of %d trials, every one recorded%s; %s; restart the engine, then: ctrbench run --db %s --resume %s", stopped, out.Summary.Ran, out.Summary.Planned, held, removed, db, out.Campaign.ID))
		}
		return withCode(ExitError, fmt.Errorf("interrupted after %d of %d trials%s; %s; resume with: ctrbench run --db %s --resume %s", out.Summary.Ran, out.Summary.Planned, held, removed, db, out.Campaign.ID))
	}
	var rec *orchestrator.RecordError
	if errors.As(err, &rec) && out.Campaign.ID != "" {
		why := strings.TrimPrefix(rec.Err.Error(), fmt.Sprintf("recording trial %d: ", rec.Seq))
		remedy := "fix what the error names"
		if store.IsFull(rec.Err) {
			remedy = "free space on the disk that holds it (or fix what the error names)"
		}
		return withCode(ExitError, fmt.Errorf("the results database %s could not record trial %d (%s), so the campaign stopped; every trial recorded before it is kept; %s; %s, then: ctrbench run --db %s --resume %s", db, rec.Seq, why, removed, remedy, db, out.Campaign.ID))
	}
	return err
}

// leftBehind says what the end of a campaign could not remove, and how to.
func leftBehind(errs []string, id string) string {
	return fmt.Sprintf("%d clean-up step(s) failed (%s), so some of what it created may be left: run `ctrbench clean --campaign %s`", len(errs), strings.Join(errs, "; "), id)
}

// appendSummary appends the comparison's Markdown verdict to path.
func appendSummary(path string, cmp analysis.Comparison) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("--summary: %w", err)
	}
	if err := report.CompareSummary(f, cmp); err != nil {
		f.Close()
		return fmt.Errorf("--summary %s: %w", path, err)
	}
	return f.Close()
}
