package workload

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ctrbench/ctrbench/internal/hdr"
)

// Combine says how values of one metric measured at the same time — the
// pairs of a trial — make one, the trial's aggregate; for a percentile it
// names the histogram it is read from, which also lets reports pool a
// cell's repetitions. It is declared once, with the metric; the zero value
// is a rate's work over the span when the unit is per second (…/s), the
// mean otherwise.
type Combine struct {
	How How
	// Histogram is, for CombinePercentile, the distribution the
	// percentile is read from; for CombineWeighted, the one whose number
	// of values weighs each pair's value (a mean of what it records).
	Histogram string
	// Quantile is the percentile's, 0 < q ≤ 100.
	Quantile float64
	// Weight is, for CombineWeighted, the count metric (CombineSum) of the
	// same workload whose value weighs each pair's: a ratio's denominator,
	// such as the datagrams sent for a loss.
	Weight string
}

// How is a way of combining.
type How int

const (
	CombineDefault How = iota // CombineRate for a unit per second, CombineMean otherwise
	CombineMean               // the mean of the pairs' values
	// CombineRate is the pairs' work over their span, Σ rate·duration /
	// (last end − first start): the sum when they ran together, less when
	// they did not. Declared for a rate whose unit does not end in /s.
	CombineRate
	CombineSum      // a count: the pairs' values add up
	CombineWeighted // Σ value·weight / Σ weight: a ratio weighted by its denominator, or a mean by its number of values
	// CombinePercentile is the percentile of the pairs' merged histograms,
	// never a mean of their percentiles.
	CombinePercentile
	// CombineNone leaves the aggregate out: a percentile a tool printed
	// without its histogram cannot be combined honestly. The pairs'
	// values stay.
	CombineNone
)

// Combine values for workloads' metric lists.
var (
	Rate      = Combine{How: CombineRate}
	Count     = Combine{How: CombineSum}
	PairsOnly = Combine{How: CombineNone}
)

// PercentileOf is percentile q (0–100) of the named histogram.
func PercentileOf(histogram string, q float64) Combine {
	return Combine{How: CombinePercentile, Histogram: histogram, Quantile: q}
}

// WeightedBy is a ratio weighted by the count metric that is its
// denominator.
func WeightedBy(count string) Combine { return Combine{How: CombineWeighted, Weight: count} }

// MeanOf is a mean of the values the named histogram records, weighted by
// their number: the mean of all of them, exact as each pair's mean is.
func MeanOf(histogram string) Combine {
	return Combine{How: CombineWeighted, Histogram: histogram}
}

// Resolve returns how a metric in unit combines, the default made
// explicit.
func (c Combine) Resolve(unit string) How {
	if c.How != CombineDefault {
		return c.How
	}
	if strings.HasSuffix(unit, "/s") {
		return CombineRate
	}
	return CombineMean
}

// Describe says in a few words how a metric in unit combines over pairs,
// for `ctrbench workloads TYPE`.
func (c Combine) Describe(unit string) string {
	switch c.Resolve(unit) {
	case CombineRate:
		return "work over the span"
	case CombineSum:
		return "sum"
	case CombineWeighted:
		if c.Weight != "" {
			return "mean weighted by " + c.Weight
		}
		return "mean of all " + c.Histogram + " values"
	case CombinePercentile:
		return fmt.Sprintf("p%v of the merged %s histogram", c.Quantile, c.Histogram)
	case CombineNone:
		return "none (each pair's only)"
	}
	return "mean"
}

// Histogram declares a distribution a workload records in an HDR
// histogram and returns with its result (result.Histogram), for its
// percentile metrics to be read from again over pairs and repetitions.
type Histogram struct {
	Name string // what it is a distribution of: "latency", "fct"
	Unit string // of the recorded integers: "ns", "µs"
	Doc  string
}

// Histogram returns the declared histogram called name.
func (s *Spec) Histogram(name string) (Histogram, bool) {
	for _, h := range s.Histograms {
		if h.Name == name {
			return h, true
		}
	}
	return Histogram{}, false
}

// percentileName is how a percentile metric is named (latency_p99,
// fct_p50): such a metric must say how it combines.
var percentileName = regexp.MustCompile(`_p[0-9]+$`)

// checkCombine reports the first way the metrics' Combine and the
// histograms disagree: a percentile reads a histogram the workload
// declares, in a unit it converts to; a weight is a count of the
// workload; a metric named as a percentile is combined as one or not at
// all; every histogram is read by a percentile (none is returned for
// nothing).
func (s *Spec) checkCombine() error {
	read := map[string]bool{}
	for _, h := range s.Histograms {
		if h.Name == "" || h.Unit == "" || read[h.Name] {
			return fmt.Errorf("histogram %q: want a unique name and a unit", h.Name)
		}
		read[h.Name] = false
	}
	for _, m := range s.Metrics {
		c := m.Combine
		switch c.How {
		case CombinePercentile:
			h, ok := s.Histogram(c.Histogram)
			switch {
			case !ok:
				return fmt.Errorf("metric %s is a percentile of histogram %q, which the workload does not declare", m.Name, c.Histogram)
			case !(c.Quantile > 0 && c.Quantile <= 100):
				return fmt.Errorf("metric %s: percentile %v is not in (0, 100]", m.Name, c.Quantile)
			case !hdr.Convertible(h.Unit, m.Unit):
				return fmt.Errorf("metric %s in %s cannot be read from histogram %s in %s", m.Name, m.Unit, h.Name, h.Unit)
			}
			read[h.Name] = true
		case CombineWeighted:
			w, isMetric := s.Metric(c.Weight)
			_, isHist := s.Histogram(c.Histogram)
			switch {
			case (c.Weight == "") == (c.Histogram == ""):
				return fmt.Errorf("metric %s is weighted by a count metric or by a histogram's number of values: one of them", m.Name)
			case c.Weight != "" && (!isMetric || w.Combine.How != CombineSum):
				return fmt.Errorf("metric %s is weighted by %q, which is no count (CombineSum) of the workload", m.Name, c.Weight)
			case c.Histogram != "" && !isHist:
				return fmt.Errorf("metric %s is weighted by histogram %q, which the workload does not declare", m.Name, c.Histogram)
			}
		}
		if percentileName.MatchString(m.Name) && c.How != CombinePercentile && c.How != CombineNone {
			return fmt.Errorf("metric %s is a percentile: declare the histogram it is read from (PercentileOf) or that it has no aggregate (PairsOnly)", m.Name)
		}
	}
	for _, h := range s.Histograms {
		if !read[h.Name] {
			return fmt.Errorf("histogram %s is read by no percentile metric", h.Name)
		}
	}
	return nil
}
