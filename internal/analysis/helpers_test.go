package analysis

import (
	"context"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// testType is a workload declaring throughput before latency, so tests see
// metrics put in declared order whatever order trials report them in.
const testType = "test.analysis"

func init() {
	workload.Register(&workload.Spec{
		Type: testType,
		Metrics: []workload.Metric{
			{Name: "throughput", Unit: "Gbit/s", Better: result.Higher},
			{Name: "latency", Unit: "ms", Better: result.Lower},
		},
		Run: map[string]workload.RunFunc{workload.Main: func(context.Context, workload.Values, workload.Env) ([]result.Observation, string, error) {
			return nil, "", nil // never run: analysis only reads what it declares
		}},
	})
}

// Identities of every shape a producer writes.
var (
	throughput = result.MetricID{Metric: "throughput", Scope: result.ScopeTrial, Kind: result.KindMeasure}
	aggregate  = result.MetricID{Metric: "throughput", Scope: result.ScopeAggregate, Kind: result.KindMeasure}
	latency    = result.MetricID{Metric: "latency", Scope: result.ScopeTrial, Kind: result.KindMeasure}
	serverTp   = result.MetricID{Metric: "throughput", Scope: result.ScopeTrial, Kind: result.KindMeasure, Role: "server"}
	cpuSeconds = result.MetricID{Metric: "cpu_seconds", Scope: result.ScopeTrial, Kind: result.KindTelemetry}
	pair1      = result.MetricID{Metric: "throughput", Scope: result.ScopePair, Kind: result.KindMeasure, Index: 1}
	pair2      = result.MetricID{Metric: "throughput", Scope: result.ScopePair, Kind: result.KindMeasure, Index: 2}
	pair2CPU   = result.MetricID{Metric: "cpu_seconds", Scope: result.ScopePair, Kind: result.KindTelemetry, Index: 2, Role: "server"}
	jain       = result.MetricID{Metric: "jain", Scope: result.ScopeAggregate, Kind: result.KindPairs}
	overlap    = result.MetricID{Metric: "overlap_pct", Scope: result.ScopeNeighbour, Kind: result.KindMeasure}
	neighCPU   = result.MetricID{Metric: "cpu_seconds", Scope: result.ScopeNeighbour, Kind: result.KindTelemetry, Index: 2}
)

// ob is an observation of id, as a producer writes it: scope and kind
// left empty where they are the defaults.
func ob(id result.MetricID, v float64) result.Observation {
	o := result.Observation{Metric: id.Metric, Scope: id.Scope, Kind: id.Kind, Role: id.Role, Index: id.Index, Value: v, Unit: "u", Better: result.Higher}
	if o.Scope == result.ScopeTrial {
		o.Scope = ""
	}
	if o.Kind == result.KindMeasure {
		o.Kind = ""
	}
	return o
}

// trialMaker numbers trials in run order.
type trialMaker struct{ seq int }

func (m *trialMaker) ok(cell int, obs ...result.Observation) result.Trial {
	m.seq++
	return result.Trial{CampaignID: "c", CellID: cell, Seq: m.seq, Status: result.OK, Observations: obs}
}

func (m *trialMaker) failed(cell int, why string) result.Trial {
	m.seq++
	return result.Trial{CampaignID: "c", CellID: cell, Seq: m.seq, Status: result.Failed, Error: why}
}

func cell(id int, factors map[string]string) result.Cell {
	return result.Cell{ID: id, Workload: "tcp", WorkloadType: testType, Factors: factors}
}

func load(t *testing.T, src Source, baseline ...string) Loaded {
	t.Helper()
	l, err := Load(context.Background(), src, Query{Campaign: "c", Baseline: baseline})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return l
}

// series finds a cell's series of a metric.
func series(t *testing.T, l Loaded, cellID int, id result.MetricID) Series {
	t.Helper()
	for _, s := range l.Series {
		if s.CellID == cellID && s.ID == id {
			return s
		}
	}
	t.Fatalf("no series of %v in cell %d", id, cellID)
	return Series{}
}
