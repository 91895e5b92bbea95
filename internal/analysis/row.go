package analysis

import (
	"math"
	"sort"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Row is one series' statistics: what every format prints. It is made of
// parts, each a struct embedded by value, so that r.Mean, r.IR, … read as
// before and a new field is declared once, in the part it belongs to.
//
// Its JSON is the parts' fields by their json tags, flattened in the order
// of the parts and of their fields (as encoding/json flattens embedded
// structs); those names and that order are a contract with scripts that
// read the output. NaN and Inf encode as null (row_json.go). CSV is the
// same fields in the same order, but for their csv tags (report/csv.go).
type Row struct {
	Identity
	Trials
	Stats
	VsBaseline
	Checks
	Scaling
	Caveats
}

// Identity is what a row is of: a metric of a workload in a cell of a
// campaign.
type Identity struct {
	Campaign     string            `json:"campaign"`
	Workload     string            `json:"workload"` // the workload's name in the experiment file
	WorkloadType string            `json:"workload_type"`
	Metric       string            `json:"metric"` // ID as reports print it (MetricID.String)
	ID           result.MetricID   `json:"-"`      // as the cell's trials reported it
	Unit         string            `json:"unit"`
	Better       result.Better     `json:"better"`
	Cell         map[string]string `json:"cell"` // factor -> level
	CellID       int               `json:"-"`
}

// Trials are the trials a row's statistics are of, and those left out.
type Trials struct {
	// Values are the trials' values the statistics are of, Seqs their
	// trials (seq), for a report that shows each trial.
	Values []float64 `json:"-"`
	Seqs   []int     `json:"-"`
	N      int       `json:"n"`
	Failed int       `json:"failed"`
	// Flagged counts ok trials whose conditions were not as planned (e.g.
	// neighbours covering under 95% of the window, pairs that did not run
	// together): set apart, in no statistic of the row. FlaggedMean is
	// their mean and FlaggedSeqs their trials, for a reader to look at.
	// CSV has always had Flagged after the interference ratio, and neither
	// FlaggedMean nor FlaggedSeqs.
	Flagged       int       `json:"flagged" csv:",after=ir_excludes_0"`
	FlaggedMean   *float64  `json:"flagged_mean,omitempty" csv:"-"`
	FlaggedSeqs   []int     `json:"flagged_seqs,omitempty" csv:"-"`
	FlaggedValues []float64 `json:"-"`
}

// Stats are the statistics of a row's trials (Trials.Values).
type Stats struct {
	Mean   float64    `json:"mean"`
	SD     float64    `json:"sd"`
	RSDPct float64    `json:"rsd_pct"`
	CI95   [2]float64 `json:"ci95"`
}

// VsBaseline is a row's difference from its baseline cell.
type VsBaseline struct {
	VsBaselinePct    *float64    `json:"vs_baseline_pct"` // nil for the baseline cell and when not computable
	VsBaselineCI95   *[2]float64 `json:"vs_baseline_ci95"`
	PValue           *float64    `json:"p_value"`
	Significant      *bool       `json:"significant"` // the interval excludes 0
	VsBaselineMethod string      `json:"vs_baseline_method,omitempty"`
	Baseline         bool        `json:"baseline"`
	// Interference ratio (S0): (mean − mean_alone)/mean_alone, negated for
	// lower-is-better metrics so that negative is always worse; its 95%
	// interval as for vs_baseline; nil for cells without neighbours.
	IR          *float64    `json:"ir"`
	IRCI95      *[2]float64 `json:"ir_ci95"`
	IRExcludes0 *bool       `json:"ir_excludes_0"`
	// VsBaselineNote says why part of the comparison is undefined (no
	// variance; a baseline mean of 0), "" when nothing is. CSV has always
	// had it after the difference.
	VsBaselineNote string `json:"vs_baseline_note,omitempty" csv:",after=vs_baseline_diff_ci95"`
	// VsBaselineDiff is mean − mean_baseline with its 95% interval, set
	// where no ratio exists (a baseline mean of 0).
	VsBaselineDiff     *float64    `json:"vs_baseline_diff,omitempty"`
	VsBaselineDiffCI95 *[2]float64 `json:"vs_baseline_diff_ci95,omitempty"`
	// Base summarises the baseline cell's values, nil without one.
	Base *stats.Summary `json:"-"`
}

// Checks are what a row's trials and comparison were checked for:
// outliers, an adaptive campaign's precision target, this machine's noise
// floor.
type Checks struct {
	// Outliers are the seqs of this cell's trials whose value is an
	// outlier by the generalized ESD test (stats.Outliers): flagged, kept.
	Outliers []int `json:"outliers,omitempty"`
	// In an adaptive campaign, the metric that decided when a cell had
	// enough trials carries the target and what was reached: the 95%
	// interval's half-width relative to the mean, in percent.
	TargetRCIPct *float64 `json:"target_rci_pct,omitempty"`
	RCIPct       *float64 `json:"rci_pct,omitempty"`
	Reached      *bool    `json:"target_reached,omitempty"`
	// With a calibration of this machine: the minimum detectable effect
	// (percent) of this comparison, at its n and its baseline's, and
	// whether the difference is below it.
	MDEPct          *float64 `json:"mde_pct,omitempty"`
	BelowNoiseFloor *bool    `json:"below_noise_floor,omitempty"`
}

// Scaling is the slowdown (S1) in a campaign that varies the number of
// instances: the time one instance took for its work against the baseline
// cell's (the inverse ratio of rates), from each trial's mean over its
// instances; 1 is no change. Its 95% interval is nil without variance.
type Scaling struct {
	Slowdown     *float64    `json:"slowdown,omitempty"`
	SlowdownCI95 *[2]float64 `json:"slowdown_ci95,omitempty"`
}

// Caveats say how far a row's numbers can be read.
type Caveats struct {
	// NotComparable says why this row's numbers compare with nothing (a
	// virtual machine under emulation); absent when they do.
	NotComparable string `json:"not_comparable,omitempty" csv:"-"`
	// FewTrials is set when the interval rests on fewer than three trials
	// (one degree of freedom: t(0.975, 1) = 12.7), where it is too wide to
	// say much and its level rests on the trials being normal.
	FewTrials bool `json:"few_trials,omitempty" csv:"-"`
}

// MinTrials is the fewest trials whose interval a report shows without a
// warning.
const MinTrials = 3

// Rows computes one Row per Series, ordered by workload and metric (each in
// order of first appearance; metrics as SameMetric groups them) and then
// cell ID, so output does not depend on how the series were ordered.
func Rows(series []Series) []Row {
	ordered := orderSeries(series)
	rows := make([]Row, len(ordered))
	for i, s := range ordered {
		rows[i] = row(s)
	}
	return rows
}

// orderSeries orders series as Rows does.
func orderSeries(series []Series) []Series {
	wOrder, mOrder := map[string]int{}, map[result.MetricID]int{}
	type keyed struct {
		w, m, cell int
		s          Series
	}
	ks := make([]keyed, 0, len(series))
	for _, s := range series {
		if _, ok := wOrder[s.Workload]; !ok {
			wOrder[s.Workload] = len(wOrder)
		}
		m := metricKey(s.ID)
		if _, ok := mOrder[m]; !ok {
			mOrder[m] = len(mOrder)
		}
		ks = append(ks, keyed{wOrder[s.Workload], mOrder[m], s.CellID, s})
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.w != b.w {
			return a.w < b.w
		}
		if a.m != b.m {
			return a.m < b.m
		}
		return a.cell < b.cell
	})
	out := make([]Series, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	return out
}

// row computes a series' statistics: its trials' summary, what its
// trials were checked for and, against its baseline cell, its difference,
// slowdown and interference ratio.
func row(s Series) Row {
	sample := s.sample(s.Values, s.Reps)
	sum := stats.SummarizeSample(sample)
	id := s.Identity
	id.Metric = s.ID.String()
	id.Cell = make(map[string]string, len(s.Cell)) // never nil: JSON shows {}
	for k, v := range s.Cell {
		id.Cell[k] = v
	}
	r := Row{
		Identity:   id,
		Trials:     Trials{Values: s.Values, Seqs: s.Seqs, N: sum.N, Failed: s.Failed, Flagged: s.Flagged},
		Stats:      Stats{Mean: sum.Mean, SD: sum.SD, RSDPct: sum.RSDPct, CI95: sum.CI95},
		VsBaseline: VsBaseline{Baseline: s.IsBaseline},
		Caveats:    Caveats{NotComparable: s.NotComparable, FewTrials: sum.N >= 2 && sum.N < MinTrials},
	}
	if len(s.FlaggedValues) > 0 {
		m := stats.Summarize(s.FlaggedValues).Mean
		r.FlaggedMean, r.FlaggedSeqs, r.FlaggedValues = &m, s.FlaggedSeqs, s.FlaggedValues
	}
	r.checkTarget(s, sum)
	for _, i := range stats.Outliers(s.Values) {
		if i < len(s.Seqs) {
			r.Outliers = append(r.Outliers, s.Seqs[i])
		}
	}
	if s.IsBaseline || s.Baseline == nil {
		return r
	}
	baseSample := s.sample(s.Baseline, s.BaseReps)
	base := stats.SummarizeSample(baseSample)
	r.Base = &base
	if s.Slowdown {
		r.slowdown(s)
	}
	if s.Interference {
		r.interference(s, sample, baseSample)
	}
	compareToBaseline(&r, s, sample, baseSample)
	return r
}

// checkTarget records, for the series whose interval decided when an
// adaptive campaign's cell had enough trials, its target and what its
// summary sum reached.
func (c *Checks) checkTarget(s Series, sum stats.Summary) {
	if s.TargetRCI <= 0 {
		return
	}
	target := 100 * s.TargetRCI
	c.TargetRCIPct = &target
	reached := false
	if half := (sum.CI95[1] - sum.CI95[0]) / 2; finite(half) && sum.Mean != 0 {
		got := 100 * half / math.Abs(sum.Mean)
		c.RCIPct, reached = &got, got <= target
	}
	c.Reached = &reached
}

// slowdown computes S1's slowdown of the series' instances against its
// baseline cell's, with its interval where there is variance.
func (sc *Scaling) slowdown(s Series) {
	sd, ok := stats.SlowdownOf(s.sample(s.PerInstance, s.PerInstanceReps), s.sample(s.BasePerInstance, s.BasePerInstanceReps), s.Better == result.Lower)
	if !ok {
		return
	}
	v := sd.Value
	sc.Slowdown = &v
	if sd.Defined {
		ci := sd.CI95
		sc.SlowdownCI95 = &ci
	}
}

// interference computes S0's interference ratio of the sample (beside
// neighbours) against the baseline's (the target alone), with its
// interval where it is defined.
func (v *VsBaseline) interference(s Series, sample, baseSample stats.Sample) {
	ir, ok := stats.InterferenceRatio(sample, baseSample, s.Better == result.Lower)
	if !ok {
		return
	}
	x := ir.IR
	v.IR = &x
	if ir.Defined {
		ci, ex := ir.CI95, ir.Excludes0
		v.IRCI95, v.IRExcludes0 = &ci, &ex
	}
}

// compareToBaseline sets r's difference from its baseline cell: a ratio
// in percent (or, where none exists, the difference of the means), the
// noise floor's minimum detectable effect with a calibration, and, where
// the comparison is defined, its interval and verdict.
func compareToBaseline(r *Row, s Series, sample, baseSample stats.Sample) {
	c, ok := stats.CompareSamples(sample, baseSample)
	if !ok {
		return
	}
	r.VsBaselineNote = c.Note
	if finite(c.Pct) {
		pct := c.Pct
		r.VsBaselinePct = &pct
	} else {
		d := c.Diff
		r.VsBaselineDiff = &d
		if c.Defined {
			dci := c.DiffCI95
			r.VsBaselineDiffCI95 = &dci
		}
	}
	if s.NoiseCVPct > 0 && finite(c.Pct) {
		if d := stats.MDELog(s.NoiseCVPct, len(s.Values), len(s.Baseline)); finite(d) {
			mde := 100 * (math.Exp(d) - 1)
			below := math.Abs(math.Log1p(c.Pct/100)) < d
			r.MDEPct, r.BelowNoiseFloor = &mde, &below
		}
	}
	if !c.Defined {
		return // what was measured, without an interval or a verdict
	}
	sig, p := c.Significant, c.PValue
	r.Significant, r.PValue, r.VsBaselineMethod = &sig, &p, c.Method
	if finite(c.Pct) {
		ci := c.CI95
		r.VsBaselineCI95 = &ci
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
