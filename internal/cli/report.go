package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/advice"
	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/campaign"
	"github.com/ctrbench/ctrbench/internal/htmlreport"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/store"
)

// The store holds the trials' histograms apart, for --pooled.
var _ analysis.HistogramSource = (*store.DB)(nil)

type reportOptions struct {
	DB        string
	Campaign  string
	Format    string
	Failures  bool
	Telemetry bool
	PerPair   bool
	Matrix    bool
	Pooled    bool
	Baseline  []string // factor=level overrides of the campaign's baseline
	HTML      string   // also write the HTML report to this file
	// MaxSlowdown and Services are the HTML report's placement advice's.
	MaxSlowdown string
	Services    string
	// History is the HTML report's history section; nil: the campaign's
	// experiment's history in its database.
	History *analysis.History
}

func newReportCmd() *cobra.Command {
	o := reportOptions{}
	c := &cobra.Command{
		Use:   "report",
		Short: "Print per-cell statistics of a campaign (latest by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := report.Lookup(o.Format); err != nil {
				return usageError{err}
			}
			db, err := openResults(cmd.Context(), o.DB)
			if err != nil {
				return err
			}
			defer db.Close()
			if o.Campaign == "" {
				c, err := db.LatestCampaign(cmd.Context())
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no campaign in %s yet: run one with `ctrbench run FILE`", o.DB)
				}
				if err != nil {
					return err
				}
				o.Campaign = c.ID
			}
			if o.HTML != "" {
				return writeHTML(cmd.Context(), db, o, cmd.OutOrStdout())
			}
			return writeReport(cmd.Context(), db, o, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&o.DB, "db", DefaultDB, "results database (SQLite)")
	c.Flags().StringVar(&o.Campaign, "campaign", "", "campaign ID or unique prefix (default: the latest)")
	c.Flags().StringVar(&o.Format, "format", "table", "table, csv, json, markdown, benchfmt (Go's benchmark format, for benchstat) or openmetrics")
	c.Flags().StringVar(&o.MaxSlowdown, "max-slowdown", DefaultMaxSlowdown, "with --html, for a co-location campaign: the placement advice's tolerance (as ctrbench advise)")
	c.Flags().StringVar(&o.Services, "services", "", "with --html, for a co-location campaign: services to pack in the placement advice, name=kind,… (as ctrbench advise)")
	c.Flags().StringVar(&o.HTML, "html", "", "write the report as one self-contained HTML file (figures, telemetry, failures, every trial; opens offline) to this path instead")
	c.Flags().BoolVar(&o.Failures, "failures", false, "list failed and timed-out trials with their reasons instead")
	c.Flags().BoolVar(&o.Matrix, "matrix", false, "co-location campaigns: S0's matrices, targets by neighbours per case, IR with intervals and mean [SD]")
	c.Flags().StringArrayVar(&o.Baseline, "baseline", nil, "compare against another baseline than the experiment's: factor=level (repeatable), e.g. --baseline layer=reference")
	c.Flags().BoolVar(&o.PerPair, "per-pair", false, "also show each client/server pair's or instance's own results (pair<i>.<metric>, instance<i>.<metric>) in the table, with pairs or instances > 1; JSON and CSV always include them")
	c.Flags().BoolVar(&o.Pooled, "pooled", false, "instead: each cell's percentiles of all requests of all its trials, from their stored histograms, beside the mean of the trials' own percentiles that the report shows")
	c.Flags().BoolVar(&o.Telemetry, "telemetry", false, "also show telemetry (CPU time, throttling, memory peak, I/O, context switches, retransmissions) in the table; JSON and CSV always include it")
	return c
}

// writeReport prints campaign o.Campaign's report, or its failed trials,
// from src. A format or baseline the user got wrong is a usage error.
func writeReport(ctx context.Context, src analysis.Source, o reportOptions, w io.Writer) error {
	if o.Pooled && (o.Failures || o.Matrix) {
		return usageError{errors.New("--pooled prints percentiles; it does not combine with --failures or --matrix")}
	}
	if o.Failures {
		return report.WriteFailures(ctx, w, src, o.Campaign)
	}
	ro := report.Options{
		Campaign: o.Campaign, Format: o.Format, Matrix: o.Matrix, Baseline: o.Baseline,
		Filter: analysis.Filter{Telemetry: o.Telemetry, PerPair: o.PerPair},
	}
	var err error
	if o.Pooled {
		err = report.WritePooled(ctx, w, src, ro)
	} else {
		err = report.Write(ctx, w, src, ro)
	}
	var bad *analysis.BaselineError
	switch {
	case errors.As(err, &bad):
		return usageError{fmt.Errorf("--baseline %q: want factor=level with a level the campaign ran", bad.Override)}
	case errors.Is(err, report.ErrUnknownFormat):
		return usageError{err}
	}
	return err
}

func newCampaignsCmd() *cobra.Command {
	var dbPath string
	c := &cobra.Command{
		Use:   "campaigns",
		Short: "List the campaigns in a results database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := store.Open(cmd.Context(), dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			cs, err := db.Campaigns(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "id\tstatus\tstarted\tfile")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, campaign.Status(c), c.Started.Format("2006-01-02 15:04:05"), c.SpecPath)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&dbPath, "db", DefaultDB, "results database (SQLite)")
	return c
}

// writeHTML writes campaign o.Campaign's HTML report to o.HTML, through a
// temporary file so that a failed render leaves no half-written report,
// and says where it is.
func writeHTML(ctx context.Context, src analysis.Source, o reportOptions, stdout io.Writer) error {
	if o.Failures || o.Pooled || o.Matrix {
		return usageError{errors.New("--html writes the whole report (figures, failures, every trial); it does not combine with --failures, --pooled or --matrix")}
	}
	ao, err := htmlAdvice(o)
	if err != nil {
		return err
	}
	dir := filepath.Dir(o.HTML)
	tmp, err := os.CreateTemp(dir, ".ctrbench-report-*.html")
	if err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	defer os.Remove(tmp.Name())
	hist := o.History
	if hist == nil {
		if hist, err = historyOf(ctx, src, o.Campaign); err != nil {
			return err
		}
	}
	id, err := htmlreport.Write(ctx, tmp, src, htmlreport.Options{Campaign: o.Campaign, Baseline: o.Baseline, Advice: ao, History: hist})
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("HTML report: %w", cerr)
	}
	var bad *analysis.BaselineError
	var badAdvice *advice.InputError
	switch {
	case errors.As(err, &bad):
		return usageError{fmt.Errorf("--baseline %q: want factor=level with a level the campaign ran", bad.Override)}
	case errors.As(err, &badAdvice):
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	if err := os.Rename(tmp.Name(), o.HTML); err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	fmt.Fprintf(stdout, "HTML report of campaign %s written to %s\n", id, o.HTML)
	return nil
}

// htmlAdvice reads the placement advice's flags of report --html.
func htmlAdvice(o reportOptions) (htmlreport.AdviceOptions, error) {
	var ao htmlreport.AdviceOptions
	tol := o.MaxSlowdown
	if tol == "" {
		tol = DefaultMaxSlowdown
	}
	v, err := parseSlowdown(tol)
	if err != nil {
		return ao, usageError{err}
	}
	ao.MaxSlowdown = v
	if o.Services != "" {
		if ao.Services, err = parseServices(o.Services); err != nil {
			return ao, usageError{err}
		}
	}
	return ao, nil
}
