package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// Failures writes one line per failed trial (run order, the cell it ran,
// the reason) and a count.
func Failures(w io.Writer, f analysis.Failures) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "seq\tstatus\tcell\terror")
	for _, t := range f.Trials {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", t.Seq, t.Status, t.Cell.Key(), t.Error)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write failures: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%d failed trial(s) in campaign %s\n", len(f.Trials), f.Campaign.ID); err != nil {
		return fmt.Errorf("write failures: %w", err)
	}
	return nil
}
