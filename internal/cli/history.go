package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/result"
)

type historyOptions struct {
	DBs          []string
	Format       string
	Until        string
	Last         int
	Alpha        float64
	HTML         string
	FailOnChange bool
}

func newHistoryCmd() *cobra.Command {
	o := historyOptions{}
	c := &cobra.Command{
		Use:   "history EXPERIMENT",
		Short: "Every campaign of an experiment in run order: each headline metric per cell, its changepoints, what changed between runs",
		Long: "history reads every finished campaign of the experiment named EXPERIMENT (its file's name:) from one or\n" +
			"more databases, in the order they started, and shows each workload's headline metric per cell as a\n" +
			"series of means with their 95% intervals. Changepoints are found by " + report.HistoryMethod + ":\n" +
			"a history in which nothing changed shows one with probability at most --alpha, shared by its series.\n" +
			"Each run is marked with what changed since the run before: the experiment file (its hash, after --set)\n" +
			"and the environment fingerprint (kernel, engine, runtime, CPU, governor, …).\n" +
			"--fail-on-change exits 1 when a series regressed at the newest run: a CI job runs the campaign, then\n" +
			"history, and fails when its run changed the numbers for the worse.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHistory(cmd.Context(), args[0], o, cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.DBs, "db", []string{DefaultDB}, "results database (SQLite); repeat to read several")
	f.StringVar(&o.Format, "format", "table", strings.Join(report.HistoryFormats, ", "))
	f.StringVar(&o.Until, "until", "", "the history up to and including this campaign (ID or unique prefix)")
	f.IntVar(&o.Last, "last", 0, "only the most recent N runs (up to --until); 0: every run")
	f.Float64Var(&o.Alpha, "alpha", 0.05, "the probability of showing a changepoint in a history where nothing changed")
	f.StringVar(&o.HTML, "html", "", "also write the newest run's HTML report, with the history's figures, to this file")
	f.BoolVar(&o.FailOnChange, "fail-on-change", false, "exit 1 when a series regressed at the newest run (improvements do not fail)")
	return c
}

func runHistory(ctx context.Context, name string, o historyOptions, w io.Writer) error {
	if !slices.Contains(report.HistoryFormats, o.Format) {
		return usageError{fmt.Errorf("--format %q: %s", o.Format, strings.Join(report.HistoryFormats, ", "))}
	}
	if o.Last < 0 {
		return usageError{fmt.Errorf("--last %d: a number of runs, 0 for all", o.Last)}
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return usageError{fmt.Errorf("--alpha %g: a probability between 0 and 1", o.Alpha)}
	}
	var srcs []analysis.Store
	for _, p := range o.DBs {
		db, err := openResults(ctx, p)
		if err != nil {
			return err
		}
		defer db.Close()
		srcs = append(srcs, db)
	}
	h, err := analysis.LoadHistory(ctx, srcs, analysis.HistoryQuery{Name: name, Until: o.Until, Last: o.Last, Alpha: o.Alpha})
	if err != nil {
		return err
	}
	if err := report.History(w, h, o.Format); err != nil {
		return err
	}
	if o.HTML != "" {
		last := h.Runs[len(h.Runs)-1]
		ro := reportOptions{DB: o.DBs[last.Source], Campaign: last.Campaign.ID, HTML: o.HTML, History: &h}
		out := w
		if o.Format != "table" {
			out = io.Discard // keep JSON and Markdown parseable
		}
		if err := writeHTML(ctx, srcs[last.Source], ro, out); err != nil {
			return err
		}
	}
	if n := regressedAtNewest(h); o.FailOnChange && n > 0 {
		return withCode(ExitError, fmt.Errorf("%d series of %q regressed at the newest run (%s)", n, name, h.Runs[len(h.Runs)-1].Campaign.ID))
	}
	return nil
}

// regressedAtNewest counts the series with a regression at the last run.
func regressedAtNewest(h analysis.History) int {
	n := 0
	for _, s := range h.Series {
		for _, c := range s.Changepoints {
			if c.Run == len(h.Runs)-1 && c.Verdict == analysis.Regressed {
				n++
			}
		}
	}
	return n
}

// htmlHistoryRuns bounds the runs a campaign's HTML report loads for its
// History: each is read whole, and an experiment run nightly has hundreds
// (`history --html` shows any number).
const htmlHistoryRuns = 50

// historyOf is the history of campaign id's experiment in src up to it (the
// last htmlHistoryRuns runs), for its HTML report; nil when the campaign is
// not finished.
func historyOf(ctx context.Context, src analysis.Source, id string) (*analysis.History, error) {
	st, ok := src.(analysis.Store)
	if !ok {
		return nil, nil
	}
	c, err := src.Campaign(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.Status != result.CampaignDone || c.Kind != "" {
		return nil, nil
	}
	h, err := analysis.LoadHistory(ctx, []analysis.Store{st}, analysis.HistoryQuery{Name: c.Name, Until: c.ID, Last: htmlHistoryRuns})
	if err != nil {
		return nil, err
	}
	return &h, nil
}
