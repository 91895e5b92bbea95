package runner

import (
	"math"
	"time"

	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// minPairsOverlap is the share of their window all pairs must run
// together; below it the trial is flagged.
const minPairsOverlap = 90.0

// overlapMetric is the copies' overlap statistic.
const overlapMetric = "overlap_pct"

// copies says what a trial's concurrent chains are: client/server pairs,
// or instances of a single-role workload (S1 Exp 1).
type copies struct {
	noun  string       // "pair", "instance"
	scope result.Scope // each one's observations
	kind  result.Kind  // statistics across them
}

var (
	pairCopies     = copies{"pair", result.ScopePair, result.KindPairs}
	instanceCopies = copies{"instance", result.ScopeInstance, result.KindInstances}
)

func copiesOf(c *plan.Cell) copies {
	if c.Instances {
		return instanceCopies
	}
	return pairCopies
}

// aggregatePairs turns the pairs' observations and histograms into the
// trial's: each pair's own (scope pair, its index), the aggregate of every
// metric that can be combined (scope aggregate; see combine), and
// statistics across the pairs (kind pairs): Jain's fairness index and the
// max/min ratio of the workload's headline metric (S4), and how much of
// the pairs' mean window all of them ran at once. The histograms are each
// pair's and, for those every pair recorded, the merged one the aggregate
// percentiles were read from.
func aggregatePairs(ws *workload.Spec, cp copies, perPair [][]result.Observation, hists [][]result.Histogram, windows []result.Window) ([]result.Observation, []result.Histogram, error) {
	ph, err := mergePairs(hists, cp)
	if err != nil {
		return nil, nil, err
	}
	c := &combiner{ws: ws, pairs: len(perPair), hists: ph, byID: map[result.MetricID]*pairValues{}, windows: windows}
	var out []result.Observation
	for p, obs := range perPair {
		for _, ob := range obs {
			c.add(p, ob)
			pob := ob
			pob.Scope, pob.Index = cp.scope, p+1
			out = append(out, pob)
		}
	}
	var aggs []result.Observation
	for _, id := range c.order {
		if ob, ok := c.aggregate(id); ok {
			aggs = append(aggs, ob)
		}
	}
	aggs = append(aggs, pairsStats(ws, cp, c, windows)...)
	return append(aggs, out...), ph.stored, nil
}

// pairsStats are the statistics across the pairs: fairness and spread of
// the headline metric, and their overlap.
func pairsStats(ws *workload.Spec, cp copies, c *combiner, windows []result.Window) []result.Observation {
	var out []result.Observation
	pairsStat := func(metric string, v float64, unit string, better result.Better) result.Observation {
		return result.Observation{Metric: metric, Scope: result.ScopeAggregate, Kind: cp.kind, Value: v, Unit: unit, Better: better}
	}
	if len(ws.Metrics) > 0 {
		head := result.MetricID{Metric: ws.Metrics[0].Name, Scope: result.ScopeTrial, Kind: result.KindMeasure}
		if a, ok := c.byID[head]; ok && a.complete() {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range a.vals {
				lo, hi = min(lo, v), max(hi, v)
			}
			out = append(out, pairsStat(result.Jain, stats.JainFairness(a.vals), "index", result.Higher))
			if lo > 0 {
				out = append(out, pairsStat(result.MaxMinRatio, hi/lo, "ratio", result.Lower))
			}
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
		out = append(out, pairsStat(overlapMetric, 100*float64(common)/float64(mean), "%", result.Higher))
	}
	return out
}
