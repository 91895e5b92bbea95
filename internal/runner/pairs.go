package runner

import (
	"math"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// minPairsOverlap is the share of their window all pairs must run
// together; below it the trial is flagged.
const minPairsOverlap = 90.0

// overlapID is the pairs' overlap statistic.
var overlapID = result.MetricID{Metric: "overlap_pct", Scope: result.ScopeAggregate, Kind: result.KindPairs}

// isRate reports whether a unit is per second: pairs' values add up.
func isRate(unit string) bool { return strings.HasSuffix(unit, "/s") }

// aggregatePairs turns the pairs' observations into the trial's: each
// pair's own (scope pair, its index), the aggregate of every metric (scope
// aggregate), and statistics across the pairs (kind pairs): Jain's fairness
// index and the max/min ratio of the workload's headline metric (S4), and
// how much of the pairs' mean window all of them ran at once. The aggregate
// of a rate is the pairs' work over the whole span, Σ rate_i·duration_i /
// (last end − first start): the sum of the rates when the pairs ran
// together, less when they did not (never a sum of rates that were not
// simultaneous). Other metrics are averaged.
func aggregatePairs(ws *workload.Spec, perPair [][]result.Observation, hists [][]result.Histogram, windows []result.Window) ([]result.Observation, []result.Histogram, error) {
	type agg struct {
		ob   result.Observation
		vals []float64
	}
	var order []result.MetricID
	byMetric := map[result.MetricID]*agg{}
	var out []result.Observation
	for p, obs := range perPair {
		for _, ob := range obs {
			id := ob.ID()
			a, ok := byMetric[id]
			if !ok {
				a = &agg{ob: ob}
				byMetric[id] = a
				order = append(order, id)
			}
			a.vals = append(a.vals, ob.Value)
			pob := ob
			pob.Scope, pob.Index = result.ScopePair, p+1
			out = append(out, pob)
		}
	}
	var first, last time.Time
	for i, w := range windows {
		if i == 0 || w.Start.Before(first) {
			first = w.Start
		}
		if i == 0 || w.End.After(last) {
			last = w.End
		}
	}
	span := last.Sub(first).Seconds()
	var aggs []result.Observation
	for _, id := range order {
		a := byMetric[id]
		var sum, work float64
		for _, v := range a.vals {
			sum += v
		}
		ob := a.ob
		ob.Scope = result.ScopeAggregate
		ob.Value = sum / float64(len(a.vals))
		if isRate(ob.Unit) && len(a.vals) == len(windows) && span > 0 {
			for p, v := range a.vals {
				work += v * windows[p].End.Sub(windows[p].Start).Seconds()
			}
			ob.Value = work / span
		}
		aggs = append(aggs, ob)
	}
	pairsStat := func(metric string, v float64, unit string, better result.Better) result.Observation {
		return result.Observation{Metric: metric, Scope: result.ScopeAggregate, Kind: result.KindPairs, Value: v, Unit: unit, Better: better}
	}
	var headline string
	if len(ws.Metrics) > 0 {
		headline = ws.Metrics[0].Name
	}
	head := result.MetricID{Metric: headline, Scope: result.ScopeTrial, Kind: result.KindMeasure}
	if a, ok := byMetric[head]; ok && len(a.vals) == len(perPair) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range a.vals {
			lo, hi = min(lo, v), max(hi, v)
		}
		aggs = append(aggs, pairsStat("jain", stats.JainFairness(a.vals), "index", result.Higher))
		if lo > 0 {
			aggs = append(aggs, pairsStat("max_min_ratio", hi/lo, "ratio", result.Lower))
		}
	}
	var start, end time.Time
	var total time.Duration
	for i, w := range windows {
		if i == 0 || w.Start.After(start) {
			start = w.Start
		}
		if i == 0 || w.End.Before(end) {
			end = w.End
		}
		total += w.End.Sub(w.Start)
	}
	if mean := total / time.Duration(len(windows)); mean > 0 {
		common := max(end.Sub(start), 0)
		aggs = append(aggs, pairsStat(overlapID.Metric, 100*float64(common)/float64(mean), "%", result.Higher))
	}
	return append(aggs, out...), nil, nil
}
