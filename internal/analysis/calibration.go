package analysis

import (
	"context"
	"math"
	"math/rand/v2"
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
	// FPR is the share of random splits of the 2N trials into two halves
	// that the comparison calls significant: the false-positive rate of
	// ctrbench's test on this machine's distribution (0.05 when it is
	// as the test assumes).
	FPR float64
	// MDEPct is the smallest relative difference a comparison of two cells
	// of N trials detects with 80% power (stats.MDE).
	MDEPct float64
}

// Calibration is a calibration campaign's noise floor, metric by metric.
type Calibration struct {
	Campaign result.Campaign
	Floors   []Floor
}

// resamples is how many random splits estimate a false-positive rate.
const resamples = 1000

// LoadCalibration reads a calibration campaign and works out its noise
// floor: for each workload's cell and measured metric, the pooled
// variation of A and B, their difference, the false-positive rate of the
// comparison and the minimum detectable effect at its number of trials.
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
	for i, k := range order {
		a, b := sides[k][0], sides[k][1]
		if len(a.Values) < 2 || len(b.Values) < 2 {
			continue
		}
		f := Floor{Workload: a.Workload, WorkloadType: a.WorkloadType, Cell: a.Cell, Metric: a.ID.String(), ID: a.ID, Unit: a.Unit,
			N: min(len(a.Values), len(b.Values)), RSDPct: pooledCV(a.Values, b.Values)}
		if c, ok := stats.Compare(b.Values, a.Values); ok {
			f.AAPct, f.AACI95, f.AASignificant = c.Pct, c.CI95, c.Significant
		}
		f.FPR = falsePositiveRate(a.Values, b.Values, uint64(i))
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

// falsePositiveRate splits the pooled trials of an A/A pair at random into
// two groups of the original sizes, many times, and counts how often the
// comparison calls the split significant. The splits are seeded: the same
// calibration gives the same rate.
func falsePositiveRate(a, b []float64, seed uint64) float64 {
	pool := append(append([]float64(nil), a...), b...)
	rng := rand.New(rand.NewPCG(seed, 0xca11b))
	hits, tried := 0, 0
	for range resamples {
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		c, ok := stats.Compare(pool[len(a):], pool[:len(a)])
		if !ok || !c.Defined {
			continue
		}
		tried++
		if c.Significant {
			hits++
		}
	}
	if tried == 0 {
		return math.NaN()
	}
	return float64(hits) / float64(tried)
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
