package analysis

import (
	"context"
	"strings"

	"github.com/ctrbench/ctrbench/internal/baseline"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Series is one cell's values of one metric, with its baseline's. Its
// Identity is what its row is of: Load fills it whole, and row sets the
// row's Metric from ID (a Series made by hand may leave Metric empty) and
// copies Cell. A Series is never encoded, only its rows, so the JSON tags
// Identity brings change no output.
type Series struct {
	Identity
	Values  []float64 // one per ok, non-warmup, unflagged trial
	Seqs    []int     // the trial of each value (its seq)
	Reps    []int     // the repetition of each value's trial
	Failed  int       // trials of this cell that failed or timed out
	Flagged int       // ok trials whose conditions were not as planned (see result.Trial.Flags)
	// FlaggedValues are those trials' values (FlaggedSeqs their seqs): set
	// apart, in no statistic.
	FlaggedValues []float64
	FlaggedSeqs   []int
	Baseline      []float64 // the baseline cell's values for the same metric; nil if none
	BaseReps      []int     // the repetition of each baseline value's trial
	IsBaseline    bool
	// Range is what the metric's values can be (result.Bounds): intervals
	// stay inside it.
	Range stats.Range
	// TwoStageMin is, in an adaptive campaign, its min: the first stage of
	// each cell's two-stage design is the values of the repetitions up to
	// it (stats.FirstStage), whose variance every interval of the campaign
	// takes; 0 for a fixed number of trials.
	TwoStageMin int
	// Interference marks a cell with neighbours: its row also carries S0's
	// interference ratio against the baseline (the target alone).
	Interference bool
	// TargetRCI is the adaptive campaign's target for this series: the 95%
	// interval's half-width relative to the mean (a fraction) that decided
	// when the cell had enough trials; 0 when it decided nothing.
	TargetRCI float64
	// Slowdown marks a campaign that varies the number of instances: the
	// row carries S1's slowdown, from PerInstance (one value per trial: the
	// mean over its instances) against BasePerInstance, the baseline
	// cell's.
	Slowdown                     bool
	PerInstance, BasePerInstance []float64
	PerInstanceReps              []int // the repetition of each PerInstance value's trial
	BasePerInstanceReps          []int
	// NoiseCVPct is this machine's trial-to-trial variation of the metric
	// (percent), from its latest calibration of the experiment; 0 when
	// there is none.
	NoiseCVPct float64
	// NotComparable says why the cell's numbers compare with nothing (a
	// platform under emulation); "" when they do.
	NotComparable string
}

// Query says which campaign to load and against which baseline.
type Query struct {
	Campaign string   // its ID (a store also takes a unique prefix)
	Baseline []string // factor=level overrides of the campaign's baseline
}

// Loaded is a campaign with its trials grouped into series.
type Loaded struct {
	Campaign result.Campaign // Baseline as resolved: the campaign's, or overridden
	Series   []Series        // cell by cell (by ID), each cell's metrics in metricOrder
	// Calibration is the machine's noise floor the rows were judged
	// against (the experiment's latest calibration on this host), nil
	// for none.
	Calibration *Calibration
}

// Load reads a campaign from src and groups its trials into series, each
// with its baseline cell's values. An override naming a level no cell ran
// is a *BaselineError.
func Load(ctx context.Context, src Source, q Query) (Loaded, error) {
	camp, err := src.Campaign(ctx, q.Campaign)
	if err != nil {
		return Loaded{}, err
	}
	cells, err := src.Cells(ctx, camp.ID)
	if err != nil {
		return Loaded{}, err
	}
	if camp.Baseline, err = resolveBaseline(camp.Baseline, q.Baseline, cells); err != nil {
		return Loaded{}, err
	}
	trials, err := src.Trials(ctx, camp.ID)
	if err != nil {
		return Loaded{}, err
	}
	sm := seriesMaker{camp: camp, g: group(trials), instances: factorVaries(cells, vocab.FInstances)}
	var cal *Calibration
	if cal, sm.noise, err = noiseFloors(ctx, src, camp); err != nil {
		return Loaded{}, err
	}
	var series []Series
	for _, c := range cells {
		metrics := sm.metrics(c)
		baseID, hasBase := baseline.Cell(camp.Baseline, c, cells)
		for _, m := range metrics {
			series = append(series, sm.series(c, m, baseID, hasBase))
		}
	}
	return Loaded{Campaign: camp, Series: series, Calibration: cal}, nil
}

// noiseFloors finds the machine's latest calibration of the campaign's
// experiment (none for a calibration itself) and its noise floor, each
// metric's trial-to-trial variation in percent, by workload and metric
// key.
func noiseFloors(ctx context.Context, src Source, camp result.Campaign) (*Calibration, map[string]float64, error) {
	noise := map[string]float64{} // workload + metric key -> CV, percent
	if camp.Kind == result.KindCalibration {
		return nil, noise, nil
	}
	cal, err := latestCalibration(ctx, src, camp)
	if err != nil {
		return nil, nil, err
	}
	if cal != nil {
		for _, f := range cal.Floors {
			noise[f.Workload+" "+metricKey(f.ID).String()] = f.RSDPct
		}
	}
	return cal, noise, nil
}

// seriesMaker makes a campaign's series from its grouped trials.
type seriesMaker struct {
	camp result.Campaign
	g    groups
	// instances says whether the campaign varies the number of
	// instances (a slowdown to derive).
	instances bool
	noise     map[string]float64 // noiseFloors's
}

// metrics are the metrics of cell c that have series, in metricOrder. A
// cell all of whose trials failed still has one, the workload's first
// metric, so it shows with its failures.
func (sm seriesMaker) metrics(c result.Cell) []result.MetricID {
	metrics := metricOrder(c, sm.g.seen[c.ID])
	if len(metrics) == 0 && sm.g.failed[c.ID] > 0 {
		if ms := workload.MetricsOf(c.WorkloadType, c.Params); len(ms) > 0 {
			m := ms[0]
			sm.g.meta[cellMetric{c.ID, declared(m)}] = result.Observation{Metric: m.Name, Unit: m.Unit, Better: m.Better}
			metrics = []result.MetricID{declared(m)}
		}
	}
	return metrics
}

// series is cell c's series of metric m, with what decides how its row
// is computed, and against baseID's values when the cell has a baseline.
func (sm seriesMaker) series(c result.Cell, m result.MetricID, baseID int, hasBase bool) Series {
	g := sm.g
	k := cellMetric{c.ID, m}
	id, ok := g.ids[k]
	if !ok {
		id = m
	}
	s := Series{
		Identity: Identity{
			Campaign: sm.camp.ID, Workload: c.Workload, WorkloadType: c.WorkloadType,
			Metric: id.String(), ID: id, Unit: g.meta[k].Unit, Better: g.meta[k].Better,
			Cell: c.Factors, CellID: c.ID,
		},
		Values: g.values[k], Seqs: g.seqs[k], Reps: g.reps[k],
		Failed: g.failed[c.ID], Flagged: g.flagged[c.ID], FlaggedValues: g.flaggedValues[k], FlaggedSeqs: g.flaggedSeqs[k],
		Interference: hasNeighbours(c),
	}
	lo, hi := result.Bounds(id, s.Unit)
	s.Range = stats.Range{Lo: lo, Hi: hi}
	s.NoiseCVPct = sm.noise[c.Workload+" "+metricKey(id).String()]
	s.NotComparable = notComparable(sm.camp.Env, c.Factors)
	if adaptive := sm.camp.Adaptive; adaptive != nil {
		s.TwoStageMin = adaptive.Min
		if decides(adaptive, c, id) {
			s.TargetRCI = adaptive.RCI
		}
	}
	if hasBase {
		sm.withBaseline(&s, c, m, baseID)
	}
	return s
}

// withBaseline gives s, cell c's series of metric m, its baseline cell
// baseID's values, and those values per instance where the campaign
// varies the number of instances and m is the trial's own measure.
func (sm seriesMaker) withBaseline(s *Series, c result.Cell, m result.MetricID, baseID int) {
	g := sm.g
	k, bk := cellMetric{c.ID, m}, cellMetric{baseID, m}
	s.IsBaseline = baseID == c.ID
	if !s.IsBaseline {
		s.Baseline, s.BaseReps = g.values[bk], g.reps[bk]
	}
	if sm.instances && !lifecycle(c) && m.Kind == result.KindMeasure && m.Role == "" && m.Scope == result.ScopeTrial {
		s.Slowdown = true
		s.PerInstance, s.BasePerInstance = g.perInstance[k], g.perInstance[bk]
		s.PerInstanceReps, s.BasePerInstanceReps = g.perInstanceReps[k], g.perInstanceReps[bk]
	}
}

// lifecycle reports whether a cell's workload times its entities' lives:
// its instances are what is measured, so no slowdown is derived from them.
func lifecycle(c result.Cell) bool {
	ws, ok := workload.Lookup(c.WorkloadType)
	return ok && ws.Trial.Lifecycle
}

// factorVaries reports whether some cell of the campaign has factor f.
func factorVaries(cells []result.Cell, f string) bool {
	for _, c := range cells {
		if _, ok := c.Factors[f]; ok {
			return true
		}
	}
	return false
}

// hasNeighbours reports whether a cell ran its target beside neighbours.
func hasNeighbours(c result.Cell) bool {
	a, ok := c.Factors[vocab.FNeighbour]
	return ok && a != vocab.NeighbourNone
}

// decides reports whether id is the metric whose interval decided when an
// adaptive campaign's cell c had enough trials: the one the file names,
// else the workload's first, as the trial (or all pairs) measured it.
func decides(a *result.Adaptive, c result.Cell, id result.MetricID) bool {
	m := a.Metric
	if m == "" {
		if ms := workload.MetricsOf(c.WorkloadType, c.Params); len(ms) > 0 {
			m = ms[0].Name
		}
	}
	return id.Metric == m && id.Kind == result.KindMeasure && id.Role == "" &&
		(id.Scope == result.ScopeTrial || id.Scope == result.ScopeAggregate)
}

// notComparable is why a cell placed on a platform that recorded itself
// not comparable (vocab.InfoNotComparable) compares with nothing; "" when
// no platform of the cell did.
func notComparable(env, factors map[string]string) string {
	for k, v := range factors {
		if k != vocab.FPlatform && !strings.HasSuffix(k, "."+vocab.FPlatform) {
			continue
		}
		if why := env[v+"."+vocab.InfoNotComparable]; why != "" {
			return v + ": " + why
		}
	}
	return ""
}

// sample is values as the statistics take them: with the metric's range
// and, in an adaptive campaign, the first stage of their two-stage design.
func (s Series) sample(values []float64, reps []int) stats.Sample {
	out := stats.Sample{Values: values, Range: s.Range}
	if s.TwoStageMin > 0 {
		out.Stage = stats.FirstStage(reps, s.TwoStageMin)
	}
	return out
}
