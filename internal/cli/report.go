package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/workload"
)

type reportOptions struct {
	DB        string
	Campaign  string
	Format    string
	Failures  bool
	Telemetry bool
	PerPair   bool
	Matrix    bool
	Baseline  []string // factor=level overrides of the campaign's baseline
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
			db, err := store.Open(cmd.Context(), o.DB)
			if err != nil {
				return err
			}
			defer db.Close()
			id := o.Campaign
			if id == "" {
				c, err := db.LatestCampaign(cmd.Context())
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no campaign in %s yet: run one with `ctrbench run FILE`", o.DB)
				}
				if err != nil {
					return err
				}
				id = c.ID
			}
			if o.Failures {
				return writeFailures(cmd.Context(), db, id, cmd.OutOrStdout())
			}
			if o.Matrix {
				series, _, err := loadSeries(cmd.Context(), db, id, o.Baseline)
				if err != nil {
					return err
				}
				return report.Matrix(cmd.OutOrStdout(), report.Rows(series))
			}
			return writeReport(cmd.Context(), db, id, o.Format, o.Telemetry, o.PerPair, o.Baseline, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&o.DB, "db", DefaultDB, "results database (SQLite)")
	c.Flags().StringVar(&o.Campaign, "campaign", "", "campaign ID or unique prefix (default: the latest)")
	c.Flags().StringVar(&o.Format, "format", "table", "table, csv or json")
	c.Flags().BoolVar(&o.Failures, "failures", false, "list failed and timed-out trials with their reasons instead")
	c.Flags().BoolVar(&o.Matrix, "matrix", false, "co-location campaigns: S0's matrices, targets by neighbours per case, IR with intervals and mean [SD]")
	c.Flags().StringArrayVar(&o.Baseline, "baseline", nil, "compare against another baseline than the experiment's: factor=level (repeatable), e.g. --baseline layer=reference")
	c.Flags().BoolVar(&o.PerPair, "per-pair", false, "also show each client/server pair's own results (pair<i>.<metric>) in the table, with pairs > 1; JSON and CSV always include them")
	c.Flags().BoolVar(&o.Telemetry, "telemetry", false, "also show telemetry (CPU time, throttling, memory peak, I/O, context switches, retransmissions) in the table; JSON and CSV always include it")
	return c
}

// loadSeries turns a campaign's stored trials into report series: per cell
// and metric, the values of ok non-warm-up trials, with the baseline cell's.
func loadSeries(ctx context.Context, db *store.DB, id string, baseline []string) ([]report.Series, result.Campaign, error) {
	camp, err := db.Campaign(ctx, id)
	if err != nil {
		return nil, camp, err
	}
	cells, err := db.Cells(ctx, camp.ID)
	if err != nil {
		return nil, camp, err
	}
	if len(baseline) > 0 {
		b := map[string]string{}
		for k, v := range camp.Baseline {
			b[k] = v
		}
		for _, kv := range baseline {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !factorHasLevel(cells, k, v) {
				return nil, camp, usageError{fmt.Errorf("--baseline %q: want factor=level with a level the campaign ran", kv)}
			}
			b[k] = v
		}
		camp.Baseline = b
	}
	trials, err := db.Trials(ctx, camp.ID)
	if err != nil {
		return nil, camp, err
	}
	type key struct {
		cell   int
		metric string
	}
	values := map[key][]float64{}
	meta := map[string]result.Observation{}
	metricsSeen := map[int][]string{} // per cell, in first-seen order
	failed, flagged := map[int]int{}, map[int]int{}
	for _, t := range trials {
		if t.Warmup {
			continue
		}
		if t.Status != result.OK {
			failed[t.CellID]++
			continue
		}
		if t.Flags != "" {
			flagged[t.CellID]++
		}
		for _, ob := range t.Observations {
			name := ob.ID().String()
			k := key{t.CellID, name}
			if _, ok := values[k]; !ok {
				metricsSeen[t.CellID] = append(metricsSeen[t.CellID], name)
			}
			values[k] = append(values[k], ob.Value)
			meta[name] = ob
		}
	}
	var series []report.Series
	for _, c := range cells {
		metrics := metricOrder(c, metricsSeen[c.ID])
		if len(metrics) == 0 && failed[c.ID] > 0 {
			// Every trial failed: still show the cell, with its failures.
			if ws, ok := workload.Lookup(c.WorkloadType); ok && len(ws.Metrics) > 0 {
				m := ws.Metrics[0]
				meta[m.Name] = result.Observation{Metric: m.Name, Unit: m.Unit, Better: m.Better}
				metrics = []string{m.Name}
			}
		}
		baseID, hasBase := spec.BaselineCell(camp.Baseline, c, cells)
		for _, m := range metrics {
			s := report.Series{
				Campaign: camp.ID, Workload: c.Workload, WorkloadType: c.WorkloadType,
				Metric: m, Unit: meta[m].Unit, Better: meta[m].Better,
				Cell: c.Factors, CellID: c.ID, Values: values[key{c.ID, m}], Failed: failed[c.ID], Flagged: flagged[c.ID],
				Interference: hasNeighbours(c),
			}
			if hasBase {
				s.IsBaseline = baseID == c.ID
				if !s.IsBaseline {
					s.Baseline = values[key{baseID, m}]
				}
			}
			series = append(series, s)
		}
	}
	return series, camp, nil
}

// hasNeighbours reports whether a cell ran its target beside antagonists.
func hasNeighbours(c result.Cell) bool {
	a, ok := c.Factors[spec.FAntagonist]
	return ok && a != spec.AntagonistNone
}

// metricOrder lists a cell's metrics in the workload's declared order,
// then any others seen (e.g. server-side metrics).
func metricOrder(c result.Cell, seen []string) []string {
	have := map[string]bool{}
	for _, m := range seen {
		have[m] = true
	}
	var out []string
	if ws, ok := workload.Lookup(c.WorkloadType); ok {
		for _, m := range ws.Metrics {
			if have[m.Name] {
				out = append(out, m.Name)
				delete(have, m.Name)
			}
		}
	}
	for _, m := range seen {
		if have[m] {
			out = append(out, m)
		}
	}
	return out
}

// factorHasLevel reports whether some cell has factor k at level v.
func factorHasLevel(cells []result.Cell, k, v string) bool {
	for _, c := range cells {
		if c.Factors[k] == v {
			return true
		}
	}
	return false
}

func writeReport(ctx context.Context, db *store.DB, id, format string, withTelemetry, perPair bool, baseline []string, w io.Writer) error {
	f, err := report.Lookup(format)
	if err != nil {
		return usageError{err}
	}
	series, camp, err := loadSeries(ctx, db, id, baseline)
	if err != nil {
		return err
	}
	if format == "table" {
		fmt.Fprintf(w, "campaign %s (%s), %s, started %s\n\n", camp.ID, camp.SpecPath, camp.Status, camp.Started.Format("2006-01-02 15:04:05 MST"))
		kept := series[:0]
		for _, s := range series {
			if (withTelemetry || !isTelemetry(s.Metric)) && (perPair || !isPerPair(s.Metric)) {
				kept = append(kept, s)
			}
		}
		series = kept
	}
	return f(w, report.Rows(series))
}

// isTelemetry reports whether a metric is telemetry ("telemetry.cpu_seconds",
// "server.telemetry.cpu_seconds").
func isTelemetry(metric string) bool {
	return strings.HasPrefix(metric, "telemetry.") || strings.Contains(metric, ".telemetry.")
}

// isPerPair reports whether a metric is one pair's ("pair3.throughput_gbps")
// rather than the trial's aggregate.
func isPerPair(metric string) bool {
	rest, ok := strings.CutPrefix(metric, "pair")
	if !ok {
		return false
	}
	n, _, ok := strings.Cut(rest, ".")
	_, err := strconv.Atoi(n)
	return ok && err == nil
}

func writeFailures(ctx context.Context, db *store.DB, id string, w io.Writer) error {
	camp, err := db.Campaign(ctx, id)
	if err != nil {
		return err
	}
	cells, err := db.Cells(ctx, camp.ID)
	if err != nil {
		return err
	}
	byID := map[int]result.Cell{}
	for _, c := range cells {
		byID[c.ID] = c
	}
	trials, err := db.Trials(ctx, camp.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "seq\tstatus\tcell\terror")
	n := 0
	for _, t := range trials {
		if t.Status == result.OK {
			continue
		}
		n++
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", t.Seq, t.Status, byID[t.CellID].Key(), t.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d failed trial(s) in campaign %s\n", n, camp.ID)
	return nil
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.Status, c.Started.Format("2006-01-02 15:04:05"), c.SpecPath)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&dbPath, "db", DefaultDB, "results database (SQLite)")
	return c
}
