package analysis

import (
	"context"
	"math"
	"sort"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// CalibrationFactor is the factor whose two levels, A and B, are the two
// identical cells of an A/A calibration.
const CalibrationFactor = "calibration"

// Levels of the calibration factor.
const (
	CalibrationA = "a"
	CalibrationB = "b"
)

// Floor is this machine's noise for one metric of one workload, measured
// by running the same cell twice (A/A).
type Floor struct {
	Workload, WorkloadType string
	Cell                   map[string]string // the cell's levels, without the calibration factor
	Metric                 string
	ID                     result.MetricID
	Unit                   string
	N                      int     // trials on each side (the smaller)
	RSDPct                 float64 // pooled coefficient of variation of a trial, percent
	// The A/A difference, B against A, with its interval: a real
	// difference here is a false positive.
	AAPct         float64
	AACI95        [2]float64
	AASignificant bool
	// RunOrder is A's and B's values together in the order their trials
	// ran: FalsePositives compares consecutive blocks of it.
	RunOrder []float64
	// MDEPct is the smallest relative increase a comparison of two cells
	// of N trials detects with 80% power (stats.MDE).
	MDEPct float64
}

// FalsePositives is the false-positive rate of ctrbench's comparison on
// this machine, measured on a calibration's trials in run order.
type FalsePositives struct {
	Block       int // trials per block: the n of the comparisons judged
	Comparisons int // pairs of consecutive blocks compared
	Significant int // of them, called significant
	Rate        float64
	CI95        [2]float64 // Clopper–Pearson
}

// FalsePositives compares consecutive blocks of k trials in the order
// they ran — trials 1…k against k+1…2k, then 2k+1…3k against 3k+1…4k,
// and so on — and counts how often the comparison reports make calls
// identical cells different. Every trial is of the same cell, so each
// call is a false positive; blocks in run order keep whatever drifts
// during a campaign (a warming machine, a neighbour, a filling disk) in
// the comparison, as it is in an experiment's: random splits of the
// pooled trials would erase it. The interval is exact for the number of
// comparisons, so a short calibration gives a wide one. k below 2 is
// taken as 2.
func (f Floor) FalsePositives(k int) FalsePositives {
	k = max(k, 2)
	out := FalsePositives{Block: k, Rate: math.NaN()}
	for i := 0; i+2*k <= len(f.RunOrder); i += 2 * k {
		c, ok := stats.Compare(f.RunOrder[i+k:i+2*k], f.RunOrder[i:i+k])
		if !ok || !c.Defined {
			continue
		}
		out.Comparisons++
		if c.Significant {
			out.Significant++
		}
	}
	if out.Comparisons > 0 {
		out.Rate = float64(out.Significant) / float64(out.Comparisons)
	}
	out.CI95 = stats.BinomialCI(out.Significant, out.Comparisons)
	return out
}

// Calibration is a calibration campaign's noise floor, metric by metric.
type Calibration struct {
	Campaign result.Campaign
	Floors   []Floor
}

// LoadCalibration reads a calibration campaign and works out its noise
// floor: for each workload's cell and measured metric, the pooled
// variation of A and B, their difference, their trials in run order (for
// FalsePositives) and the minimum detectable effect at its number of
// trials.
func LoadCalibration(ctx context.Context, src Source, id string) (Calibration, error) {
	l, err := Load(ctx, src, Query{Campaign: id})
	if err != nil {
		return Calibration{}, err
	}
	cal := Calibration{Campaign: l.Campaign}
	type key struct {
		workload, cell string
		metric         result.MetricID
	}
	sides := map[key][2]Series{}
	var order []key
	for _, s := range l.Series {
		level := s.Cell[CalibrationFactor]
		if s.ID.Kind != result.KindMeasure || s.ID.Scope.PerCopy() || (level != CalibrationA && level != CalibrationB) {
			continue
		}
		cell := map[string]string{}
		for k, v := range s.Cell {
			if k != CalibrationFactor {
				cell[k] = v
			}
		}
		k := key{s.Workload, result.FactorString(cell), metricKey(s.ID)}
		pair, seen := sides[k]
		if !seen {
			order = append(order, k)
		}
		pair[map[string]int{CalibrationA: 0, CalibrationB: 1}[level]] = s
		pair[0].Cell, pair[1].Cell = cell, cell
		sides[k] = pair
	}
	for _, k := range order {
		a, b := sides[k][0], sides[k][1]
		if len(a.Values) < 2 || len(b.Values) < 2 {
			continue
		}
		f := Floor{Workload: a.Workload, WorkloadType: a.WorkloadType, Cell: a.Cell, Metric: a.ID.String(), ID: a.ID, Unit: a.Unit,
			N: min(len(a.Values), len(b.Values)), RSDPct: pooledCV(a.Values, b.Values), RunOrder: runOrder(a, b)}
		if c, ok := stats.Compare(b.Values, a.Values); ok {
			f.AAPct, f.AACI95, f.AASignificant = c.Pct, c.CI95, c.Significant
		}
		f.MDEPct = stats.MDE(f.RSDPct, f.N, f.N)
		cal.Floors = append(cal.Floors, f)
	}
	return cal, nil
}

// pooledCV is the pooled standard deviation of two samples relative to
// their common mean, in percent.
func pooledCV(a, b []float64) float64 {
	sa, sb := stats.Summarize(a), stats.Summarize(b)
	df := float64(sa.N + sb.N - 2)
	sd := math.Sqrt((float64(sa.N-1)*sa.SD*sa.SD + float64(sb.N-1)*sb.SD*sb.SD) / df)
	mean := (float64(sa.N)*sa.Mean + float64(sb.N)*sb.Mean) / float64(sa.N+sb.N)
	if mean == 0 {
		return math.NaN()
	}
	return 100 * sd / math.Abs(mean)
}

// runOrder merges two series' values by their trials' seqs.
func runOrder(a, b Series) []float64 {
	type v struct {
		seq int
		x   float64
	}
	var all []v
	for i, x := range a.Values {
		all = append(all, v{a.Seqs[i], x})
	}
	for i, x := range b.Values {
		all = append(all, v{b.Seqs[i], x})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	out := make([]float64, len(all))
	for i, x := range all {
		out[i] = x.x
	}
	return out
}

// Lister is a Source that can list its campaigns (the store), so a report
// can find the machine's latest calibration.
type Lister interface {
	Campaigns(ctx context.Context) ([]result.Campaign, error)
}

// latestCalibration is the newest calibration campaign of experiment name
// on the same host, or nil.
func latestCalibration(ctx context.Context, src Source, c result.Campaign) (*Calibration, error) {
	l, ok := src.(Lister)
	if !ok {
		return nil, nil
	}
	all, err := l.Campaigns(ctx)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Started.After(all[j].Started) })
	for _, x := range all {
		if x.Kind == result.KindCalibration && x.Name == c.Name && x.ID != c.ID && x.Env["hostname"] == c.Env["hostname"] {
			cal, err := LoadCalibration(ctx, src, x.ID)
			if err != nil {
				return nil, err
			}
			return &cal, nil
		}
	}
	return nil, nil
}
