package analysis

import (
	"context"
	"fmt"
	"math"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Verdicts of a change between two campaigns.
const (
	Improved  = "improved"
	Regressed = "regressed"
	// WithinThreshold: a real difference (the interval excludes 0), but
	// smaller than the noise threshold.
	WithinThreshold = "within threshold"
	NoChange        = "no change" // the interval includes 0
	// Undetermined: no variance on either side and a difference below the
	// threshold, or too few trials to say.
	Undetermined = "undetermined"
)

// Change is one metric of one cell, campaign A against campaign B.
type Change struct {
	Workload, WorkloadType string
	Cell                   map[string]string
	Metric                 string // as reports print it
	ID                     result.MetricID
	Unit                   string
	Better                 result.Better
	A, B                   stats.Summary
	// Pct is B's mean relative to A's (100·(b − a)/|a|), with its 95%
	// interval and p-value (stats.Compare); NaN where undefined.
	Pct     float64
	CI95    [2]float64
	PValue  float64
	Verdict string
	Note    string
}

// Comparison is campaign B against campaign A.
type Comparison struct {
	A, B      result.Campaign
	Threshold float64  // percent: a change smaller than this is noise
	Changes   []Change // cells in both, A's order
	OnlyA     []string // cells (keys) only A ran
	OnlyB     []string
	Regressed int // changes with the verdict Regressed
}

// CompareQuery says which campaigns to compare and how.
type CompareQuery struct {
	A, B      string  // campaign IDs (or unique prefixes)
	Threshold float64 // percent, e.g. 1 for ±1%
	// All includes telemetry and each pair's own results, which explain a
	// change rather than score it.
	All bool
}

// CompareCampaigns matches the cells of two campaigns by workload and
// factor levels, and each metric by identity, and says per metric whether
// B improved or regressed on A beyond the threshold (criterion's idea: a
// difference can be real and still too small to matter).
func CompareCampaigns(ctx context.Context, srcA, srcB Source, q CompareQuery) (Comparison, error) {
	a, err := Load(ctx, srcA, Query{Campaign: q.A})
	if err != nil {
		return Comparison{}, fmt.Errorf("campaign A: %w", err)
	}
	b, err := Load(ctx, srcB, Query{Campaign: q.B})
	if err != nil {
		return Comparison{}, fmt.Errorf("campaign B: %w", err)
	}
	out := Comparison{A: a.Campaign, B: b.Campaign, Threshold: q.Threshold}
	type key struct {
		workload, cell string
		metric         result.MetricID
	}
	cellKey := func(s Series) string { return s.Workload + " " + result.FactorString(s.Cell) }
	inB := map[key]Series{}
	cellsB := map[string]bool{}
	for _, s := range b.Series {
		inB[key{s.Workload, result.FactorString(s.Cell), metricKey(s.ID)}] = s
		cellsB[cellKey(s)] = true
	}
	cellsA := map[string]bool{}
	for _, s := range a.Series {
		ck := cellKey(s)
		if !cellsA[ck] && !cellsB[ck] {
			out.OnlyA = append(out.OnlyA, ck)
		}
		cellsA[ck] = true
		if !q.All && (s.ID.Kind == result.KindTelemetry || s.ID.Scope.PerCopy()) {
			continue
		}
		sb, ok := inB[key{s.Workload, result.FactorString(s.Cell), metricKey(s.ID)}]
		if !ok {
			continue
		}
		c := change(s, sb, q.Threshold)
		if c.Verdict == Regressed {
			out.Regressed++
		}
		out.Changes = append(out.Changes, c)
	}
	seenB := map[string]bool{}
	for _, s := range b.Series {
		if ck := cellKey(s); !cellsA[ck] && !seenB[ck] {
			seenB[ck] = true
			out.OnlyB = append(out.OnlyB, ck)
		}
	}
	return out, nil
}

// change compares one series of B with A's.
func change(a, b Series, threshold float64) Change {
	c := Change{Workload: a.Workload, WorkloadType: a.WorkloadType, Cell: a.Cell, Metric: a.ID.String(), ID: a.ID,
		Unit: a.Unit, Better: a.Better, A: stats.Summarize(a.Values), B: stats.Summarize(b.Values)}
	nan := math.NaN()
	c.Pct, c.CI95, c.PValue, c.Verdict = nan, [2]float64{nan, nan}, nan, Undetermined
	if a.Unit != b.Unit {
		// A metric whose unit changed between versions (sysbench fileio's
		// read_mbs was MiB/s before issue 10) is not comparable as stored.
		c.Note = "units differ: " + a.Unit + " in A, " + b.Unit + " in B"
		return c
	}
	cmp, ok := stats.Compare(b.Values, a.Values)
	if !ok {
		c.Note = "fewer than two trials on a side"
		return c
	}
	c.Pct, c.Note = cmp.Pct, cmp.Note
	if math.IsNaN(cmp.Pct) {
		return c // a mean of 0 in A: no relative change
	}
	worse := cmp.Pct < 0
	if a.Better == result.Lower {
		worse = cmp.Pct > 0
	}
	beyond := math.Abs(cmp.Pct) >= threshold
	switch {
	case !cmp.Defined && beyond:
		// No variance on either side: the difference is exact.
		c.Verdict = map[bool]string{true: Regressed, false: Improved}[worse]
	case !cmp.Defined:
		c.Verdict = WithinThreshold
	case !cmp.Significant:
		c.CI95, c.PValue, c.Verdict = cmp.CI95, cmp.PValue, NoChange
	case beyond:
		c.CI95, c.PValue = cmp.CI95, cmp.PValue
		c.Verdict = map[bool]string{true: Regressed, false: Improved}[worse]
	default:
		c.CI95, c.PValue, c.Verdict = cmp.CI95, cmp.PValue, WithinThreshold
	}
	return c
}
