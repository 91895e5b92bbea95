package runner

import (
	"time"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/telemetry"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// pairValues is one metric's values, pair by pair.
type pairValues struct {
	ob   result.Observation // the first pair's: identity, unit, direction
	vals []float64          // by pair
	has  []bool             // whether the pair reported it
}

// complete reports whether every pair reported the metric.
func (v *pairValues) complete() bool {
	for _, h := range v.has {
		if !h {
			return false
		}
	}
	return true
}

// combiner makes the pairs' values of each metric into the trial's, as
// the metric declares (rule).
type combiner struct {
	ws      *workload.Spec
	pairs   int
	hists   *pairHistograms
	byID    map[result.MetricID]*pairValues
	order   []result.MetricID // as first reported
	windows []result.Window
}

func (c *combiner) add(p int, ob result.Observation) {
	id := ob.ID()
	v, ok := c.byID[id]
	if !ok {
		v = &pairValues{ob: ob, vals: make([]float64, c.pairs), has: make([]bool, c.pairs)}
		c.byID[id] = v
		c.order = append(c.order, id)
	}
	v.vals[p], v.has[p] = ob.Value, true
}

// rule is how a metric combines: as its workload declares it; a telemetry
// counter that accumulates (CPU time, retransmissions) as a count, a level
// (memory peak) or a machine-wide counter (every pair read the same
// machine's softirqs) as a mean; anything else by default.
func rule(ws *workload.Spec, id result.MetricID) workload.Combine {
	switch id.Kind {
	case result.KindMeasure:
		if m, ok := ws.Metric(id.Metric); ok {
			return m.Combine
		}
	case result.KindTelemetry:
		for _, m := range telemetry.Metrics {
			if m.Name == id.Metric && m.Cumulative && !m.Machine {
				return workload.Count
			}
		}
		return workload.Combine{How: workload.CombineMean}
	}
	return workload.Combine{}
}

// aggregate is the trial's value of a metric: the pairs' work over their
// span for a rate (their mean if one pair lacks it), the mean, the sum of
// a count, a ratio or mean weighted by its count, or a percentile of the
// pairs' merged histogram. It is left out (ok false) when the rule says
// none, or when a pair lacks what the rule needs: a percentile is never
// the mean of the pairs' percentiles, nor a count the sum of some pairs'.
func (c *combiner) aggregate(id result.MetricID) (result.Observation, bool) {
	v := c.byID[id]
	r := rule(c.ws, id)
	ob := v.ob
	ob.Scope = result.ScopeAggregate
	var ok bool
	switch r.Resolve(ob.Unit) {
	case workload.CombineRate:
		ob.Value, ok = c.rate(v), true
	case workload.CombineMean:
		ob.Value, ok = mean(v), true
	case workload.CombineSum:
		ob.Value, ok = sum(v), v.complete()
	case workload.CombineWeighted:
		ob.Value, ok = c.weighted(id, v, r)
	case workload.CombinePercentile:
		ob.Value, ok = c.percentile(id, r, ob.Unit)
	}
	return ob, ok
}

func mean(v *pairValues) float64 {
	var s float64
	n := 0
	for p, x := range v.vals {
		if v.has[p] {
			s += x
			n++
		}
	}
	return s / float64(n)
}

func sum(v *pairValues) float64 {
	var s float64
	for _, x := range v.vals {
		s += x
	}
	return s
}

// rate is Σ rate·duration / (last end − first start): the sum of the
// rates when the pairs ran together, less when they did not (never a sum
// of rates that were not simultaneous).
func (c *combiner) rate(v *pairValues) float64 {
	first, last := span(c.windows)
	secs := last.Sub(first).Seconds()
	if !v.complete() || secs <= 0 {
		return mean(v)
	}
	var work float64
	for p, x := range v.vals {
		work += x * c.windows[p].End.Sub(c.windows[p].Start).Seconds()
	}
	return work / secs
}

// span is the first start and the last end of windows (at least one).
func span(windows []result.Window) (first, last time.Time) {
	first, last = windows[0].Start, windows[0].End
	for _, w := range windows[1:] {
		first, last = minTime(first, w.Start), maxTime(last, w.End)
	}
	return first, last
}

// weighted is Σ value·weight / Σ weight, each pair's weight its count
// metric (same role) or its histogram's number of values.
func (c *combiner) weighted(id result.MetricID, v *pairValues, r workload.Combine) (float64, bool) {
	if !v.complete() {
		return 0, false
	}
	var num, den float64
	for p, x := range v.vals {
		var w float64
		if r.Weight != "" {
			wid := id
			wid.Metric = r.Weight
			wv, ok := c.byID[wid]
			if !ok || !wv.has[p] {
				return 0, false
			}
			w = wv.vals[p]
		} else {
			h, ok := c.hists.perPair[p][histKey{r.Histogram, id.Role}]
			if !ok {
				return 0, false
			}
			w = float64(h.TotalCount())
		}
		num += x * w
		den += w
	}
	return num / den, den > 0
}

// percentile reads the metric's percentile of the pairs' merged histogram
// (the same role's), if every pair recorded it.
func (c *combiner) percentile(id result.MetricID, r workload.Combine, unit string) (float64, bool) {
	k := histKey{r.Histogram, id.Role}
	m, ok := c.hists.merged[k]
	if !ok {
		return 0, false
	}
	v, err := hdr.Percentile(m, r.Quantile, c.hists.units[k], unit)
	return v, err == nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
