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
	// WithinThreshold: a real difference (significant after the family's
	// correction), but its interval is not wholly beyond the threshold.
	WithinThreshold = "within threshold"
	NoChange        = "no change" // not significant after the correction
	// Undetermined: nothing can be claimed — no variance on either side,
	// too few trials, a mean of 0 in A, units that differ.
	Undetermined = "undetermined"
	// NotJudged: shown to explain a change (telemetry, each pair's own
	// values, with --all), outside the family judged.
	NotJudged = "not judged"
)

// Families of metrics a comparison judges.
const (
	// FamilyHeadline: each workload's headline metric (Headlines' rule),
	// in every cell both campaigns ran.
	FamilyHeadline = "headline"
	// FamilyAllMetrics: every measured metric of every such cell.
	FamilyAllMetrics = "all-metrics"
)

// Corrections for multiple comparisons, as the output names them.
const (
	CorrectionVerdict = "Holm" // the family-wise error of the verdicts and the exit status
	CorrectionListing = "Benjamini-Hochberg"
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
	// interval and p-value (stats.CompareSamples); NaN where undefined.
	Pct    float64
	CI95   [2]float64
	PValue float64
	// Judged: in the family whose error the verdicts control. PHolm is the
	// p-value adjusted by Holm's method over the family (the verdict's),
	// QBH the Benjamini–Hochberg q-value (the false discovery rate at
	// which the change would be listed); NaN when not judged or undefined.
	Judged  bool
	PHolm   float64
	QBH     float64
	Verdict string
	Note    string
}

// EnvDifference is a fingerprint key whose value differs between the two
// campaigns.
type EnvDifference struct {
	Key    string
	A, B   string
	Strict bool // result.FingerprintKey.Strict
}

// EngineCause is the difference among diffs that most likely explains a
// change between two campaigns of one experiment: the engine's
// (result.EngineKeys, in their order), with every other engine difference
// after it; false when the engine is the same.
func EngineCause(diffs []EnvDifference) ([]EnvDifference, bool) {
	var out []EnvDifference
	for _, k := range result.EngineKeys {
		for _, d := range diffs {
			if d.Key == k {
				out = append(out, d)
			}
		}
	}
	return out, len(out) > 0
}

// Comparison is campaign B against campaign A.
type Comparison struct {
	A, B      result.Campaign
	Threshold float64  // percent: a change smaller than this is noise
	Changes   []Change // cells in both, A's order
	OnlyA     []string // cells (keys, without the settings) only A ran
	OnlyB     []string
	// Family is which metrics were judged (FamilyHeadline or
	// FamilyAllMetrics) and Judged how many changes were in it.
	Family string
	Judged int
	// Regressed counts changes with the verdict Regressed; Discoveries
	// those whose q-value is below stats.Alpha.
	Regressed, Discoveries int
	// EnvDiffs are the fingerprint keys whose values differ.
	EnvDiffs []EnvDifference
	// Settings are the factors of one level throughout each campaign
	// whose levels differ: set aside from the cells' identity, so that
	// the cells are matched on their other factors.
	Settings []SettingDifference
	// Common counts the cells both campaigns ran (matched without the
	// settings); DesignA and DesignB are what each ran, which a
	// comparison with no cell in common names.
	Common           int
	DesignA, DesignB []WorkloadDesign
}

// CompareQuery says which campaigns to compare and how.
type CompareQuery struct {
	A, B      string  // campaign IDs (or unique prefixes)
	Threshold float64 // percent, e.g. 1 for ±1%
	// AllMetrics judges every measured metric instead of each workload's
	// headline: a larger family, the same error rate.
	AllMetrics bool
	// All also shows telemetry and each pair's own results, which explain
	// a change rather than score it: never judged.
	All bool
}

// CompareCampaigns matches the cells of two campaigns by workload and
// factor levels, and each metric by identity, and judges B against A:
//
//   - a factor of one level throughout each campaign's cells of a
//     workload (or of none of them) whose level differs between the two
//     is a setting (Settings), not part of a cell's identity: the cells
//     are matched on their other factors;
//   - the family is each workload's headline metric (or every measured
//     metric with AllMetrics) in the cells both ran;
//   - each change's p-value is its comparison's (stats.CompareSamples), and
//     Holm's method adjusts them over the family, so that two identical
//     campaigns get any verdict but "no change" with probability at most
//     5% however many metrics there are (TestCompareFalseAlarms);
//   - a change is regressed or improved when its adjusted p-value is below
//     0.05 and its 95% interval lies wholly beyond the threshold on that
//     side (criterion's rule: a real difference can be too small to
//     matter), within threshold when only the first holds;
//   - a change without variance, with fewer than two trials a side, or a
//     mean of 0 in A is undetermined, never regressed.
//
// Benjamini–Hochberg q-values list the changes at a 5% false discovery
// rate.
func CompareCampaigns(ctx context.Context, srcA, srcB Source, q CompareQuery) (Comparison, error) {
	a, err := Load(ctx, srcA, Query{Campaign: q.A})
	if err != nil {
		return Comparison{}, fmt.Errorf("campaign A: %w", err)
	}
	b, err := Load(ctx, srcB, Query{Campaign: q.B})
	if err != nil {
		return Comparison{}, fmt.Errorf("campaign B: %w", err)
	}
	set := settingsOf(a.Series, b.Series)
	out := Comparison{A: a.Campaign, B: b.Campaign, Threshold: q.Threshold, Family: FamilyHeadline, EnvDiffs: envDiffs(a.Campaign.Env, b.Campaign.Env),
		Settings: set.diffs, DesignA: designOf(a.Series), DesignB: designOf(b.Series)}
	if q.AllMetrics {
		out.Family = FamilyAllMetrics
	}
	out.match(a.Series, b.Series, set, q)
	out.judge()
	return out, nil
}

// match pairs each series of A with B's of the same cell (without the
// settings) and metric, in A's order, and lists the cells only one ran.
func (c *Comparison) match(a, b []Series, set settings, q CompareQuery) {
	type key struct {
		cell   string
		metric result.MetricID
	}
	inB := map[key]Series{}
	cellsB := map[string]bool{}
	for _, s := range b {
		inB[key{set.key(s), metricKey(s.ID)}] = s
		cellsB[set.key(s)] = true
	}
	headline := headlineMetrics(a)
	cellsA := map[string]bool{}
	for _, s := range a {
		ck := set.key(s)
		if !cellsA[ck] {
			cellsA[ck] = true
			if cellsB[ck] {
				c.Common++
			} else {
				c.OnlyA = append(c.OnlyA, ck)
			}
		}
		explains := s.ID.Kind == result.KindTelemetry || s.ID.Scope.PerCopy()
		judged := !explains && (q.AllMetrics || metricKey(s.ID) == headline[s.Workload])
		if !judged && !(q.All && explains) {
			continue
		}
		sb, ok := inB[key{ck, metricKey(s.ID)}]
		if !ok {
			continue
		}
		ch := change(s, sb)
		ch.Cell, ch.Judged = set.identity(s), judged
		c.Changes = append(c.Changes, ch)
	}
	for _, s := range b {
		if ck := set.key(s); !cellsA[ck] {
			cellsA[ck] = true // listed once
			c.OnlyB = append(c.OnlyB, ck)
		}
	}
}

// headlineMetrics is each workload's headline metric: the first series'
// that Headlines would take.
func headlineMetrics(series []Series) map[string]result.MetricID {
	out := map[string]result.MetricID{}
	for _, s := range orderSeries(series) {
		if _, ok := out[s.Workload]; !ok && headlineCandidate(s.ID) {
			out[s.Workload] = metricKey(s.ID)
		}
	}
	return out
}

// change compares one series of B with A's; the verdict is the family's
// (judge).
func change(a, b Series) Change {
	c := Change{Workload: a.Workload, WorkloadType: a.WorkloadType, Cell: a.Cell, Metric: a.ID.String(), ID: a.ID,
		Unit: a.Unit, Better: a.Better, A: stats.SummarizeSample(a.sample(a.Values, a.Reps)), B: stats.SummarizeSample(b.sample(b.Values, b.Reps))}
	nan := math.NaN()
	c.Pct, c.CI95, c.PValue, c.PHolm, c.QBH, c.Verdict = nan, [2]float64{nan, nan}, nan, nan, nan, Undetermined
	if a.Unit != b.Unit {
		// A metric whose unit changed between versions (sysbench fileio's
		// read_mbs was MiB/s before issue 10) is not comparable as stored.
		c.Note = "units differ: " + a.Unit + " in A, " + b.Unit + " in B"
		return c
	}
	cmp, ok := stats.CompareSamples(b.sample(b.Values, b.Reps), a.sample(a.Values, a.Reps))
	if !ok {
		c.Note = "fewer than two trials on a side"
		return c
	}
	c.Pct, c.Note = cmp.Pct, cmp.Note
	if math.IsNaN(cmp.Pct) || !cmp.Defined {
		// A mean of 0 in A (no relative change), or no variance on either
		// side: the difference is what was measured, and nothing says how
		// much it would vary. No claim.
		return c
	}
	c.CI95, c.PValue = cmp.CI95, cmp.PValue
	return c
}

// judge gives each change its verdict: Holm's adjusted p-values over the
// judged changes with a p-value decide significance, the interval against
// the threshold decides the verdict.
func (c *Comparison) judge() {
	var idx []int
	var ps []float64
	for i, ch := range c.Changes {
		if ch.Judged {
			c.Judged++
		}
		if ch.Judged && !math.IsNaN(ch.PValue) {
			idx = append(idx, i)
			ps = append(ps, ch.PValue)
		}
	}
	holm, bh := stats.Holm(ps), stats.BenjaminiHochberg(ps)
	for j, i := range idx {
		ch := &c.Changes[i]
		ch.PHolm, ch.QBH = holm[j], bh[j]
		if ch.QBH < stats.Alpha {
			c.Discoveries++
		}
		if ch.PHolm >= stats.Alpha {
			ch.Verdict = NoChange
			continue
		}
		worse := func(pct float64) bool {
			if ch.Better == result.Lower {
				return pct > c.Threshold
			}
			return pct < -c.Threshold
		}
		better := func(pct float64) bool {
			if ch.Better == result.Lower {
				return pct < -c.Threshold
			}
			return pct > c.Threshold
		}
		switch {
		case worse(ch.CI95[0]) && worse(ch.CI95[1]):
			ch.Verdict = Regressed
			c.Regressed++
		case better(ch.CI95[0]) && better(ch.CI95[1]):
			ch.Verdict = Improved
		default:
			ch.Verdict = WithinThreshold
		}
	}
	for i := range c.Changes {
		if !c.Changes[i].Judged && !math.IsNaN(c.Changes[i].PValue) {
			c.Changes[i].Verdict = NotJudged
		}
	}
}

// envDiffs are the fingerprint keys whose values differ between two
// campaigns' environments: a key one of them lacks counts as "", except
// a sparse key, which only one of them recorded is no difference.
func envDiffs(a, b map[string]string) []EnvDifference {
	var out []EnvDifference
	for _, k := range result.Fingerprint {
		va, vb := a[k.Key], b[k.Key]
		if k.Sparse && (va == "" || vb == "") {
			continue
		}
		if va != vb {
			out = append(out, EnvDifference{Key: k.Key, A: va, B: vb, Strict: k.Strict})
		}
	}
	return out
}

// StrictEnvDiffs are the differences that --strict-env refuses.
func (c Comparison) StrictEnvDiffs() []EnvDifference {
	var out []EnvDifference
	for _, d := range c.EnvDiffs {
		if d.Strict {
			out = append(out, d)
		}
	}
	return out
}
