package report

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// Format writes rows to w in one output format.
type Format func(io.Writer, []analysis.Row) error

// ErrUnknownFormat is returned (wrapped) by Lookup for a name that is no
// format: the user's to fix.
var ErrUnknownFormat = errors.New("unknown report format")

var formats = map[string]Format{
	"table": Table,
	"csv":   CSV,
	"json":  JSON,
	// Markdown is the table for pull requests and issues.
	"markdown": Markdown,
	// Benchfmt is Go's benchmark format, for benchstat.
	"benchfmt": Benchfmt,
	// OpenMetrics is the text exposition Prometheus and its kin read.
	"openmetrics": OpenMetrics,
}

// Lookup returns the format called name.
func Lookup(name string) (Format, error) {
	if f, ok := formats[name]; ok {
		return f, nil
	}
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%w %q (allowed: %s)", ErrUnknownFormat, name, strings.Join(names, ", "))
}

// factorNames is the sorted union of the factors of rows, so every row of
// a table or CSV has the same columns even when cells differ in factors.
func factorNames(rows []analysis.Row) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range rows {
		for k := range r.Cell {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	analysis.SortFactors(names)
	return names
}
