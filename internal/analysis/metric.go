package analysis

import (
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// metricKey is a metric's identity across the cells of a campaign. A
// trial's own value is one metric whether one pair made it (scope trial)
// or several together (scope aggregate): a campaign with pairs 1 and 3
// compares the two and reports them under one heading.
func metricKey(id result.MetricID) result.MetricID {
	if id.Scope == result.ScopeAggregate {
		id.Scope = result.ScopeTrial
	}
	return id
}

// SameMetric reports whether two identities are one metric across cells,
// as series group them: equal but for a trial's own value against the
// pairs' aggregate.
func SameMetric(a, b result.MetricID) bool { return metricKey(a) == metricKey(b) }

// declared is the key of a metric a workload declares: the measured
// role's own.
func declared(m workload.Metric) result.MetricID {
	return result.MetricID{Metric: m.Name, Scope: result.ScopeTrial, Kind: result.KindMeasure}
}

// metricOrder lists a cell's metric keys in its workload's declared order,
// then the others (other roles', pairs', telemetry) as first seen.
func metricOrder(c result.Cell, seen []result.MetricID) []result.MetricID {
	have := map[result.MetricID]bool{}
	for _, m := range seen {
		have[m] = true
	}
	var out []result.MetricID
	for _, m := range workload.MetricsOf(c.WorkloadType, c.Params) {
		if k := declared(m); have[k] {
			out = append(out, k)
			delete(have, k)
		}
	}
	for _, m := range seen {
		if have[m] {
			out = append(out, m)
		}
	}
	return out
}
