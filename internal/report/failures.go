package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// Failures writes one line per failed trial (run order, what failed it —
// the workload or the platform —, the cell it ran, the reason) and a
// count, then the trials tried again after a platform failure, with each
// earlier attempt's reason.
func Failures(w io.Writer, f analysis.Failures) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "seq\tstatus\tfailed by\tcell\terror")
	for _, t := range f.Trials {
		by := t.FailedBy
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", t.Seq, t.Status, by, t.Cell.Key(), t.Error)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write failures: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%d failed trial(s) in campaign %s\n", len(f.Trials), f.Campaign.ID); err != nil {
		return fmt.Errorf("write failures: %w", err)
	}
	if len(f.Retried) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%d trial(s) tried again after the platform failed:\n", len(f.Retried))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "seq\tattempt\tstatus\tfailed by\terror")
	for _, t := range f.Retried {
		for i, a := range t.Attempts {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", t.Seq, i+1, a.Status, a.FailedBy, a.Error)
		}
		last := t.Error
		if t.Status == "ok" {
			last = "-"
		}
		by := t.FailedBy
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", t.Seq, len(t.Attempts)+1, t.Status, by, last)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write failures: %w", err)
	}
	return nil
}
