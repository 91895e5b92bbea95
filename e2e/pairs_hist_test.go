package e2e

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestPairsPercentiles: three pairs of containers on a bridge. The trial's
// latency percentiles are read from the pairs' merged histograms, so each
// lies between the pairs' own; the requests sent add up and the loss is
// weighted by them; report --pooled reads the stored histograms back and,
// for the one trial, gives the trial's own percentile.
func TestPairsPercentiles(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[netRow](t, `name: e2e-pairs-hist
seed: 13
repetitions: 1
factors:
  platform: [docker]
  network: [bridge]
  pairs: [3]
workloads:
  - {name: udp, type: net.udp_rr, params: {duration: 500ms}}
`)
	agg, pairs := map[string]float64{}, map[string][]float64{}
	for _, r := range rows {
		if head, metric, ok := strings.Cut(r.Metric, "."); ok && strings.HasPrefix(head, "pair") && head != "pairs" {
			pairs[metric] = append(pairs[metric], r.Mean)
		} else {
			agg[r.Metric] = r.Mean
		}
	}
	for _, m := range []string{"latency_p50", "latency_p99", "latency_p999"} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range pairs[m] {
			lo, hi = min(lo, v), max(hi, v)
		}
		if v, ok := agg[m]; len(pairs[m]) != 3 || !ok || v < lo || v > hi {
			t.Errorf("%s: aggregate %v (present %v), pairs %v: want it between theirs", m, v, ok, pairs[m])
		}
	}
	var sent, lost float64
	for i, s := range pairs["sent"] {
		sent += s
		lost += s * pairs["loss_pct"][i] / 100
	}
	if agg["sent"] != sent || math.Abs(agg["loss_pct"]-100*lost/sent) > 1e-9 {
		t.Errorf("sent %v, loss %v%%; want the pairs' sum %v and Σlost/Σsent %v%%", agg["sent"], agg["loss_pct"], sent, 100*lost/sent)
	}

	rep := ctrbench(t, time.Minute, "report", "--db", db, "--pooled", "--format", "json")
	var pooled []struct {
		Metric string  `json:"metric"`
		Trials int     `json:"trials"`
		Values int64   `json:"values"`
		Pooled float64 `json:"pooled"`
	}
	if err := json.Unmarshal([]byte(rep.stdout), &pooled); err != nil {
		t.Fatalf("%v\n%s", err, rep.stdout)
	}
	if len(pooled) != 3 {
		t.Fatalf("pooled rows %+v, want latency_p50, _p99, _p999", pooled)
	}
	for _, p := range pooled {
		if p.Trials != 1 || p.Values <= 0 || p.Pooled != agg[p.Metric] {
			t.Errorf("pooled %+v, want the one trial's %s %v", p, p.Metric, agg[p.Metric])
		}
	}
}
