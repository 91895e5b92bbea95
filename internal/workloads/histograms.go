package workloads

import (
	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// percentileObservations are the observations of every metric of ms that
// is a percentile of the declared histogram, read from h as the runner
// reads the pairs' merged histogram and reports the repetitions' pooled
// one: the declaration says which percentile, once.
func percentileObservations(ms []workload.Metric, decl workload.Histogram, h *hdrhistogram.Histogram) []result.Observation {
	var out []result.Observation
	for _, m := range ms {
		if c := m.Combine; c.How == workload.CombinePercentile && c.Histogram == decl.Name {
			v, _ := hdr.Percentile(h, c.Quantile, decl.Unit, m.Unit) // units checked by workload.Register
			out = append(out, result.Observation{Metric: m.Name, Value: v, Unit: m.Unit, Better: m.Better})
		}
	}
	return out
}

// keepHistogram hands the agent the declared histogram h, encoded, to
// return with the result. A test's Env without a receiver drops it.
func keepHistogram(env workload.Env, decl workload.Histogram, h *hdrhistogram.Histogram) error {
	if env.Histogram == nil {
		return nil
	}
	data, err := hdr.Encode(h)
	if err != nil {
		return err
	}
	env.Histogram(result.Histogram{Metric: decl.Name, Unit: decl.Unit, Data: data})
	return nil
}
