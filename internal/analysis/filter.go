package analysis

import "github.com/ctrbench/ctrbench/internal/result"

// Filter says which optional rows a reader asked to see. Telemetry and
// each pair's own results multiply the rows; a table hides them unless
// asked, while machine-read formats always carry them.
type Filter struct {
	Telemetry bool // resource counters (Kind telemetry), a neighbour's included
	PerPair   bool // each pair's own results (Scope pair)
}

// Apply returns the rows f shows, in their order.
func (f Filter) Apply(rows []Row) []Row {
	var kept []Row
	for _, r := range rows {
		if (f.Telemetry || r.ID.Kind != result.KindTelemetry) && (f.PerPair || !r.ID.Scope.PerCopy()) {
			kept = append(kept, r)
		}
	}
	return kept
}
