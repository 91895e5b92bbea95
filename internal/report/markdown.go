package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// Markdown writes the table's groups as GitHub-flavoured Markdown tables,
// one per (workload, metric) under a heading, for pull requests and
// issues; the same columns and numbers as Table.
func Markdown(w io.Writer, rows []analysis.Row) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "_(no results)_")
		return err
	}
	multi := manyCampaigns(rows)
	var b strings.Builder
	for _, g := range groupRows(rows) {
		fmt.Fprintf(&b, "#### %s\n\n", mdEscape(heading(g[0], multi)))
		for i, l := range groupCells(g) {
			cells := make([]string, len(l))
			for j, c := range l {
				cells[j] = mdEscape(c)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
			if i == 0 {
				fmt.Fprintf(&b, "|%s\n", strings.Repeat("---|", len(l)))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(mdEscape(legend(rows)) + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write Markdown: %w", err)
	}
	return nil
}

// mdEscape keeps a cell's text from being read as Markdown: pipes end
// cells, and * and _ emphasise.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", "\n", " ")
	return r.Replace(s)
}
