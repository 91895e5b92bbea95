package report

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// pooledIntro says what the pooled tables show, and how they differ from
// the report's percentile rows.
const pooledIntro = `Pooled percentiles: each is the percentile of all values (requests, round trips,
flows, events) of all ok trials of a cell, read from their merged HDR histograms.
"trial mean" is what the report's table shows for the same metric: the mean over
trials of each trial's own percentile.`

// percentileNote ends a table whose campaign stored histograms: its
// percentile rows are means of the trials' percentiles, not percentiles of
// all requests.
const percentileNote = "percentiles (_pNN): the mean over trials of each trial's own percentile; `report --pooled`: the percentile of all values of all trials of a cell"

// WritePooled prints a campaign's pooled percentiles from src as a table,
// CSV or JSON (o.Format).
func WritePooled(ctx context.Context, w io.Writer, src analysis.Source, o Options) error {
	if _, err := Lookup(o.Format); err != nil {
		return err
	}
	if o.Format == "markdown" {
		return fmt.Errorf("%w %q for pooled percentiles (allowed: csv, json, table)", ErrUnknownFormat, o.Format)
	}
	camp, rows, err := analysis.LoadPooled(ctx, src, analysis.Query{Campaign: o.Campaign, Baseline: o.Baseline})
	if err != nil {
		return err
	}
	switch o.Format {
	case "csv":
		return pooledCSV(w, rows)
	case "json":
		return pooledJSON(w, rows)
	}
	if err := header(w, camp); err != nil {
		return err
	}
	return pooledTable(w, rows)
}

func pooledTable(w io.Writer, rows []analysis.Pooled) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "(no pooled percentiles: no ok trial of this campaign stored a histogram)")
		return err
	}
	if _, err := fmt.Fprintln(w, pooledIntro); err != nil {
		return fmt.Errorf("write pooled table: %w", err)
	}
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end].Workload == rows[start].Workload && rows[end].Metric == rows[start].Metric {
			end++
		}
		if err := pooledGroup(w, rows[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// pooledGroup is one metric's table: a row per cell.
func pooledGroup(w io.Writer, rows []analysis.Pooled) error {
	r := rows[0]
	head := heading(analysis.Row{Identity: analysis.Identity{Workload: r.Workload, WorkloadType: r.WorkloadType, Metric: r.Metric, Unit: r.Unit, Better: r.Better}}, false)
	if _, err := fmt.Fprintf(w, "\n%s\n", head); err != nil {
		return fmt.Errorf("write pooled table: %w", err)
	}
	factors := factorNames(cells(rows))
	missing := false
	for _, r := range rows {
		missing = missing || r.Missing > 0
	}
	cols := append(append([]string{}, factors...), "trials", "values", "pooled", "trial mean")
	if missing {
		cols = append(cols, "no histogram")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		line := make([]string, 0, len(cols))
		for _, f := range factors {
			line = append(line, r.Cell[f])
		}
		line = append(line, strconv.Itoa(r.Trials), strconv.FormatInt(r.Values, 10), Sig(r.Value), Sig(r.TrialMean))
		if missing {
			line = append(line, strconv.Itoa(r.Missing))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write pooled table: %w", err)
	}
	return nil
}

// cells are the pooled rows' cells as rows, for factorNames.
func cells(rows []analysis.Pooled) []analysis.Row {
	out := make([]analysis.Row, len(rows))
	for i, r := range rows {
		out[i].Cell = r.Cell
	}
	return out
}

func pooledCSV(w io.Writer, rows []analysis.Pooled) error {
	factors := factorNames(cells(rows))
	header := []string{"campaign", "workload", "workload_type", "metric", "unit", "better"}
	for _, f := range factors {
		header = append(header, "f:"+f)
	}
	header = append(header, "trials", "missing", "values", "pooled", "trial_mean")
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	for _, r := range rows {
		rec := []string{r.Campaign, r.Workload, r.WorkloadType, r.Metric, r.Unit, string(r.Better)}
		for _, f := range factors {
			rec = append(rec, r.Cell[f])
		}
		rec = append(rec, strconv.Itoa(r.Trials), strconv.Itoa(r.Missing), strconv.FormatInt(r.Values, 10), csvNum(r.Value), csvNum(r.TrialMean))
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write csv row: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func pooledJSON(w io.Writer, rows []analysis.Pooled) error {
	if rows == nil {
		rows = []analysis.Pooled{}
	}
	return encodeJSON(w, rows, "json pooled report")
}
