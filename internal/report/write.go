// Package report renders a campaign's rows of statistics (computed by
// internal/analysis) as a text table, CSV, JSON or S0's interference
// matrices, and its failed trials as a list. It computes nothing itself.
package report

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/physics"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// Options says what to print of a campaign.
type Options struct {
	Campaign string // its ID (a store also takes a unique prefix)
	Format   string // table, csv or json
	// Filter says which optional rows the table shows; CSV and JSON, read
	// by programs, always carry every row.
	Filter   analysis.Filter
	Matrix   bool     // S0's matrices instead of Format
	Baseline []string // factor=level overrides of the campaign's baseline
}

// Write prints a campaign's report from src as o asks. An unknown format
// is ErrUnknownFormat and a baseline override naming no level the campaign
// ran an *analysis.BaselineError, both wrapped: the caller's to report as
// bad input.
func Write(ctx context.Context, w io.Writer, src analysis.Source, o Options) error {
	q := analysis.Query{Campaign: o.Campaign, Baseline: o.Baseline}
	if o.Matrix {
		l, err := analysis.Load(ctx, src, q)
		if err != nil {
			return err
		}
		return Matrix(w, analysis.Rows(l.Series))
	}
	f, err := Lookup(o.Format)
	if err != nil {
		return err
	}
	l, err := analysis.Load(ctx, src, q)
	if err != nil {
		return err
	}
	rows := analysis.Rows(l.Series)
	if o.Format == "markdown" {
		c := l.Campaign
		if _, err := fmt.Fprintf(w, "**ctrbench campaign `%s`** (`%s`), %s, started %s\n\n", c.ID, c.SpecPath, c.Status, c.Started.Format("2006-01-02 15:04:05 MST")); err != nil {
			return fmt.Errorf("write Markdown header: %w", err)
		}
		if err := f(w, o.Filter.Apply(rows)); err != nil {
			return err
		}
		return invariant(w, rows)
	}
	if o.Format != "table" {
		return f(w, rows)
	}
	if err := header(w, l.Campaign); err != nil {
		return err
	}
	if err := f(w, o.Filter.Apply(rows)); err != nil {
		return err
	}
	if err := invariant(w, rows); err != nil {
		return err
	}
	// A campaign that stored histograms can show percentiles of another
	// kind: say which kind the table's are.
	pooled, err := analysis.Poolable(ctx, src, l.Campaign.ID)
	if err != nil || !pooled {
		return err
	}
	if _, err := fmt.Fprintln(w, percentileNote); err != nil {
		return fmt.Errorf("write table legend: %w", err)
	}
	return nil
}

// invariant checks that no network path with strictly more work than
// another measured significantly faster (physics.Orderings), and says so
// after the tables; nothing when no ordering applies to the campaign.
func invariant(w io.Writer, rows []analysis.Row) error {
	res := physics.Check(rows, physics.Options{})
	if len(res.Comparisons) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return res.WriteText(w)
}

// header is the table's first line: which campaign, from which file, in
// what state.
func header(w io.Writer, c result.Campaign) error {
	_, err := fmt.Fprintf(w, "campaign %s (%s), %s, started %s\n", c.ID, c.SpecPath, c.Status, c.Started.Format("2006-01-02 15:04:05 MST"))
	if m := MachineNoise(c.Env); err == nil && m != "" {
		_, err = fmt.Fprintf(w, "machine: %s\n", m)
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	if err != nil {
		return fmt.Errorf("write table header: %w", err)
	}
	return nil
}

// WriteFailures prints a campaign's failed and timed-out trials from src.
func WriteFailures(ctx context.Context, w io.Writer, src analysis.Source, campaign string) error {
	f, err := analysis.LoadFailures(ctx, src, campaign)
	if err != nil {
		return err
	}
	return Failures(w, f)
}

// MachineNoise names what of a campaign's machine is known to add noise
// (sysinfo.Hygiene: "KEY=VALUE, …; see docs/machine-hygiene.md"), "" when
// nothing is.
func MachineNoise(env map[string]string) string {
	ws := sysinfo.Hygiene(env)
	if len(ws) == 0 {
		return ""
	}
	parts := make([]string, len(ws))
	for i, x := range ws {
		parts[i] = x.Key + "=" + x.Value
	}
	return strings.Join(parts, ", ") + " (known to add noise: docs/machine-hygiene.md)"
}
