package e2e

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// TestPairsPercentiles: three pairs of containers on a bridge. The trial's
// latency percentiles are read from the pairs' merged histograms, so each
// lies between the pairs' own; the requests sent add up and the loss is
// weighted by them. These are identities of the stored trial, checked
// whether or not ctrbench flagged it (on a busy machine the pairs may not
// have run together). report --pooled reads the stored histograms back:
// for the one trial, unflagged, it gives the trial's own percentile; a
// flagged trial is set apart from the pool as from every other statistic.
// Each request waits up to a second for its answer: at udp_rr's 100 ms a
// make test with both cores busy had one pair's client count all 19 of its
// requests lost, a failed trial for a value a real run can take.
func TestPairsPercentiles(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-pairs-hist
seed: 13
repetitions: 1
factors:
  platform: [docker]
  network: [bridge]
  pairs: [3]
workloads:
  - {name: udp, type: net.udp_rr, params: {duration: 2s, timeout: 1s}}
`)
	trials := storedTrials(t, db, id)
	if len(trials) != 1 || trials[0].Status != result.OK {
		t.Fatalf("want one ok trial, got %+v", trials)
	}
	tr := trials[0]
	agg, pairs := map[string]float64{}, map[string][]float64{}
	for _, o := range tr.Observations {
		switch id := o.ID(); {
		case id.Kind != result.KindMeasure || id.Role != "":
		case id.Scope == result.ScopePair:
			pairs[id.Metric] = append(pairs[id.Metric], o.Value)
		case id.Scope == result.ScopeAggregate:
			agg[id.Metric] = o.Value
		}
	}
	for _, m := range []string{"latency_p50", "latency_p99", "latency_p999"} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range pairs[m] {
			lo, hi = min(lo, v), max(hi, v)
		}
		if v, ok := agg[m]; len(pairs[m]) != 3 || !ok || v < lo || v > hi || v <= 0 {
			t.Errorf("%s: aggregate %v (present %v), pairs %v: want it between theirs", m, v, ok, pairs[m])
		}
	}
	var sent, lost float64
	for i, s := range pairs["sent"] {
		sent += s
		lost += s * pairs["loss_pct"][i] / 100
	}
	if len(pairs["sent"]) != 3 || len(pairs["loss_pct"]) != 3 || sent <= 0 {
		t.Fatalf("pairs' sent %v and loss %v: want three of each, requests sent", pairs["sent"], pairs["loss_pct"])
	}
	if agg["sent"] != sent || math.Abs(agg["loss_pct"]-100*lost/sent) > 1e-9 {
		t.Errorf("sent %v, loss %v%%; want the pairs' sum %v and Σlost/Σsent %v%%", agg["sent"], agg["loss_pct"], sent, 100*lost/sent)
	}

	rep := ctrbench(t, time.Minute, "report", "--db", db, "--pooled", "--format", "json")
	if rep.code != 0 {
		t.Fatalf("report --pooled exited %d:\n%s", rep.code, rep.stderr)
	}
	var pooled []struct {
		Metric  string  `json:"metric"`
		Trials  int     `json:"trials"`
		Flagged int     `json:"flagged"`
		Values  int64   `json:"values"`
		Pooled  float64 `json:"pooled"`
	}
	if err := json.Unmarshal([]byte(rep.stdout), &pooled); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, rep.stdout, rep.stderr)
	}
	if tr.Flags != "" {
		t.Logf("the trial was flagged (%s): it must be set apart from the pool", tr.Flags)
		if len(pooled) != 0 {
			t.Errorf("a flagged trial pooled: %+v", pooled)
		}
		return
	}
	if len(pooled) != 3 {
		t.Fatalf("pooled rows %+v, want latency_p50, _p99, _p999", pooled)
	}
	for _, p := range pooled {
		if p.Trials != 1 || p.Flagged != 0 || p.Values <= 0 || p.Pooled != agg[p.Metric] {
			t.Errorf("pooled %+v, want the one trial's %s %v", p, p.Metric, agg[p.Metric])
		}
	}
}
