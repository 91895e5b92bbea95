package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Format writes rows to w in one output format.
type Format func(io.Writer, []Row) error

var formats = map[string]Format{
	"table": Table,
	"csv":   CSV,
	"json":  JSON,
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
	return nil, fmt.Errorf("unknown report format %q (allowed: %s)", name, strings.Join(names, ", "))
}

// factorNames is the sorted union of the factors of rows, so every row of
// a table or CSV has the same columns even when cells differ in factors.
func factorNames(rows []Row) []string {
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
	sort.Strings(names)
	return names
}
