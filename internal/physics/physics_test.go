package physics

import (
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	_ "github.com/ctrbench/ctrbench/internal/workloads" // registers the workload types the rows name

	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// row is a synthetic report row of a tcp_stream-like metric.
func row(cell map[string]string, values ...float64) analysis.Row {
	return analysis.Row{
		Identity: analysis.Identity{Workload: "stream", WorkloadType: "net.tcp_stream", Metric: "throughput", Unit: "Gbit/s",
			Better: result.Higher, Cell: cell},
		Trials: analysis.Trials{Values: values, N: len(values)},
	}
}

func latency(cell map[string]string, values ...float64) analysis.Row {
	r := row(cell, values...)
	r.WorkloadType, r.Workload, r.Metric, r.Unit, r.Better = "net.tcp_rr", "rr", "latency_mean", "µs", result.Lower
	return r
}

func swarm(network, hosts string) map[string]string {
	return map[string]string{"platform": "swarm", "network": network, "hosts": hosts}
}

func TestHeavierSlowerHolds(t *testing.T) {
	rows := []analysis.Row{
		row(swarm("host", "2"), 18.1, 18.6, 18.4, 18.9, 18.2, 18.5),
		row(swarm("overlay", "2"), 12.0, 12.9, 11.8, 12.6, 12.2, 12.4),
	}
	res := Check(rows, Options{})
	if len(res.Comparisons) != 1 {
		t.Fatalf("want one comparison, got %+v (skipped %+v)", res.Comparisons, res.Skipped)
	}
	c := res.Comparisons[0]
	if c.Violation || c.GainPct > -30 || c.P < 0.99 {
		t.Errorf("overlay a third slower than the host network must hold, got %+v", c)
	}
	if !strings.HasPrefix(c.Ordering.Name, "swarm overlay") {
		t.Errorf("wrong ordering: %s", c.Ordering.Name)
	}
}

// The audit's numbers: overlay 15.3 [14.5, 16.0] vs host 13.0 [12.5, 13.6]
// over 6 trials is a violation.
func TestAuditNumbersViolate(t *testing.T) {
	rows := []analysis.Row{
		row(swarm("host", "2"), 12.4, 13.5, 12.9, 13.4, 12.6, 13.2),
		row(swarm("overlay", "2"), 14.6, 16.1, 15.0, 15.9, 14.8, 15.4),
	}
	res := Check(rows, Options{})
	v := res.Violations()
	if len(v) != 1 {
		t.Fatalf("want one violation, got %+v", res.Comparisons)
	}
	if v[0].GainPct < 15 || v[0].LowPct <= 0 || v[0].PAdj >= 0.05 {
		t.Errorf("violation's numbers: %+v", v[0])
	}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 comparisons, 1 violations", "VIOLATED swarm overlay", "network=overlay", "network=host"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// A busy machine widens the intervals: the same means with a large spread
// are not a violation.
func TestNoiseIsNotAViolation(t *testing.T) {
	rows := []analysis.Row{
		row(swarm("host", "2"), 8, 17, 11, 16, 9, 17),
		row(swarm("overlay", "2"), 12, 19, 10, 18, 13, 20),
	}
	res := Check(rows, Options{})
	if len(res.Comparisons) != 1 || res.Comparisons[0].Violation {
		t.Fatalf("noisy cells must not violate: %+v", res.Comparisons)
	}
	if c := res.Comparisons[0]; c.GainPct <= 0 || c.LowPct >= 0 {
		t.Errorf("the heavier path is better on average but not significantly: %+v", c)
	}
}

// Lower is better: a heavier path with a lower latency violates.
func TestLowerIsBetter(t *testing.T) {
	rows := []analysis.Row{
		latency(map[string]string{"platform": "docker", "network": "host"}, 50, 51, 49, 52, 50),
		latency(map[string]string{"platform": "docker", "network": "bridge"}, 40, 41, 39, 40, 42),
	}
	res := Check(rows, Options{})
	if len(res.Comparisons) != 1 || !res.Comparisons[0].Violation {
		t.Fatalf("a bridge 20%% faster than the host network must violate: %+v", res.Comparisons)
	}
	if c := res.Comparisons[0]; math.Abs(c.GainPct-100*(50.4/40.4-1)) > 0.01 {
		t.Errorf("gain %.3f, want the lighter mean over the heavier's", c.GainPct)
	}
	rows[1] = latency(map[string]string{"platform": "docker", "network": "bridge"}, 60, 61, 59, 60, 62)
	if res := Check(rows, Options{}); len(res.Violations()) != 0 {
		t.Errorf("a slower bridge holds: %+v", res.Comparisons)
	}
}

// Cells are compared only when every other factor agrees; a bundle whose
// level decides the path (kratzke2015's layer) is not another factor.
func TestPairsAcrossBundlesAndContext(t *testing.T) {
	cell := func(layer, platform, network, size string) map[string]string {
		return map[string]string{"layer": layer, "platform": platform, "network": network, "hosts": "3", "param.size": size}
	}
	var rows []analysis.Row
	for _, size := range []string{"10", "100000"} {
		rows = append(rows,
			row(cell("reference", "native", "host", size), 10, 11, 10.5),
			row(cell("docker", "docker", "bridge", size), 9, 9.5, 9.2),
			row(cell("swarm-overlay", "swarm", "overlay", size), 7, 7.5, 7.2),
			row(cell("overlay", "docker", "overlay", size), 8, 8.5, 8.2),
			row(cell("overlay-encrypted", "docker", "overlay-encrypted", size), 1, 1.1, 1.05),
		)
	}
	res := Check(rows, Options{})
	got := map[string]int{}
	for _, c := range res.Comparisons {
		got[c.Ordering.Name]++
		if c.Heavier["param.size"] != c.Lighter["param.size"] || c.Heavier["hosts"] != c.Lighter["hosts"] {
			t.Errorf("compared cells that differ beyond the path: %v vs %v", c.Heavier, c.Lighter)
		}
		if c.Violation {
			t.Errorf("violation on holding data: %s", c)
		}
	}
	want := map[string]int{
		"overlay ⊃ routed bridge": 2, "encrypted overlay ⊃ overlay": 2, "containers on routed bridges ⊃ processes on the hosts": 2,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d comparisons, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if len(res.Comparisons) != 6 {
		t.Errorf("%d comparisons, want 6: %v", len(res.Comparisons), got)
	}
}

// amaral2015-network's placements: a placement bundle that does not decide
// the network is context, so a bridge is compared with the host network of
// the same placement and topology only.
func TestPlacementIsContext(t *testing.T) {
	cell := func(placement, network, topology string) map[string]string {
		c := map[string]string{"placement": placement, "network": network, "topology": topology}
		switch placement {
		case "container-host":
			c["client.platform"], c["server.platform"] = "docker", "native"
		case "host-host":
			c["client.platform"], c["server.platform"] = "native", "native"
		case "swarm":
			c["platform"] = "swarm"
		}
		return c
	}
	rows := []analysis.Row{
		row(cell("host-host", "host", "one-host"), 20, 21, 20.5),
		row(cell("container-host", "host", "one-host"), 19, 20, 19.5),
		row(cell("container-host", "bridge", "one-host"), 15, 16, 15.5),
		row(cell("container-host", "ovs", "one-host"), 1, 1.1, 0.9),
		row(cell("swarm", "host", "one-host"), 18, 18.5, 18.2),
		row(cell("swarm", "overlay", "one-host"), 12, 12.5, 12.2),
		row(cell("swarm", "host", "two-hosts"), 0.95, 0.96, 0.955),
		row(cell("swarm", "overlay", "two-hosts"), 0.92, 0.93, 0.925),
	}
	res := Check(rows, Options{})
	got := map[string]int{}
	for _, c := range res.Comparisons {
		got[c.Ordering.Name]++
		if c.Heavier["topology"] != c.Lighter["topology"] || c.Heavier["placement"] != c.Lighter["placement"] {
			t.Errorf("compared across placements or topologies: %v vs %v", c.Heavier, c.Lighter)
		}
	}
	if got["container bridge ⊃ host network"] != 1 || got["swarm overlay ⊃ swarm host network"] != 2 || len(res.Comparisons) != 3 {
		t.Errorf("comparisons: %v", got)
	}
}

// Only network workloads' rates and latencies: not a CPU workload beside
// them, not telemetry, not a pair's own value, not a count.
func TestEligibleMetrics(t *testing.T) {
	h, o := swarm("host", "2"), swarm("overlay", "2")
	mk := func(r analysis.Row, mutate func(*analysis.Row)) analysis.Row { mutate(&r); return r }
	var rows []analysis.Row
	for _, m := range []func(*analysis.Row){
		func(r *analysis.Row) {
			r.WorkloadType, r.Workload, r.Metric, r.Unit = "cpu.primes", "cpu", "events_per_sec", "events/s"
		},
		func(r *analysis.Row) { r.Metric, r.Unit, r.Better = "telemetry.cpu_seconds", "s", result.Lower },
		func(r *analysis.Row) { r.Metric = "pair2.throughput" },
		func(r *analysis.Row) { r.Metric, r.Unit, r.Better = "errors", "count", result.Lower },
		func(r *analysis.Row) { r.Metric, r.Unit, r.Better = "loss_pct", "%", result.Lower },
		func(r *analysis.Row) { r.Metric, r.Unit, r.Better = "jitter", "ms", result.Lower },
	} {
		// The heavier path "better" on every one of them: none may count.
		rows = append(rows, mk(row(h, 1, 1.1, 1.05), m), mk(row(o, 5, 5.1, 5.05), m))
	}
	res := Check(rows, Options{})
	if len(res.Comparisons) != 0 {
		t.Errorf("ineligible metrics compared: %+v", res.Comparisons)
	}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil || b.Len() != 0 {
		t.Errorf("nothing compared, yet the section says %q (%v)", b.String(), err)
	}
	// The pairs' aggregate counts like a trial's value.
	agg := func(r *analysis.Row) {
		r.ID = result.MetricID{Metric: "throughput", Scope: result.ScopeAggregate, Kind: result.KindMeasure}
	}
	rows = []analysis.Row{mk(row(h, 9, 9.5, 9.2), agg), mk(row(o, 5, 5.1, 5.05), agg)}
	if res := Check(rows, Options{}); len(res.Comparisons) != 1 {
		t.Errorf("want the pairs' aggregate throughput compared once: %+v", res.Comparisons)
	}
}

// Rows from the JSON report carry no values: SD and N stand in.
func TestFromSummary(t *testing.T) {
	h := analysis.Row{
		Identity: analysis.Identity{Workload: "stream", WorkloadType: "net.tcp_stream", Metric: "throughput", Unit: "Gbit/s", Better: result.Higher,
			Cell: swarm("host", "3")},
		Trials: analysis.Trials{N: 6},
		Stats:  analysis.Stats{Mean: 13.2, SD: 0.5},
	}
	o := h
	o.Cell, o.Mean = swarm("overlay", "3"), 14.5
	res := Check([]analysis.Row{h, o}, Options{})
	if len(res.Comparisons) != 1 || !res.Comparisons[0].Violation {
		t.Fatalf("14.5 vs 13.2 ± 0.5 over 6 trials must violate: %+v", res.Comparisons)
	}
	// With fewer than two trials nothing is claimed.
	o.N, h.N = 1, 1
	res = Check([]analysis.Row{h, o}, Options{})
	if len(res.Comparisons) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Why, "fewer than two") {
		t.Errorf("one trial each: %+v %+v", res.Comparisons, res.Skipped)
	}
}

// The margin: a heavier path 3% better is a violation at 0 and not with a
// 10% margin.
func TestMargin(t *testing.T) {
	rows := []analysis.Row{
		row(swarm("host", "2"), 10.0, 10.1, 9.9, 10.0, 10.05, 9.95),
		row(swarm("overlay", "2"), 10.3, 10.4, 10.2, 10.3, 10.35, 10.25),
	}
	if v := Check(rows, Options{}).Violations(); len(v) != 1 {
		t.Errorf("3%% better with a tight spread violates without a margin: %+v", v)
	}
	if v := Check(rows, Options{Margin: 0.10}).Violations(); len(v) != 0 {
		t.Errorf("not with a 10%% margin: %+v", v)
	}
}

// The stated error rate: when the two paths are equal (the edge of the
// null hypothesis) a check of several comparisons reports any violation
// at all in at most Alpha of campaigns.
func TestFamilyWiseErrorRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 2015))
	const campaigns = 4000
	false1 := 0
	for range campaigns {
		var rows []analysis.Row
		for _, size := range []string{"1", "2", "3", "4"} { // four comparisons per campaign
			gen := func(network string) analysis.Row {
				vs := make([]float64, 6)
				for i := range vs {
					vs[i] = 12 * math.Exp(0.1*rng.NormFloat64())
				}
				c := swarm(network, "2")
				c["param.size"] = size
				return row(c, vs...)
			}
			rows = append(rows, gen("host"), gen("overlay"))
		}
		res := Check(rows, Options{})
		if len(res.Comparisons) != 4 {
			t.Fatalf("%d comparisons", len(res.Comparisons))
		}
		if len(res.Violations()) > 0 {
			false1++
		}
	}
	rate := float64(false1) / campaigns
	t.Logf("%d campaigns of 4 null comparisons each: %.2f%% had a violation", campaigns, 100*rate)
	// Holm over 4 one-sided tests at 5%: at most 5% (a little under).
	if rate > 0.05+3*math.Sqrt(0.05*0.95/campaigns) {
		t.Errorf("family-wise false violation rate %.3f > 5%%", rate)
	}
	if rate < 0.02 {
		t.Errorf("family-wise false violation rate %.3f: the test is far more conservative than stated", rate)
	}
}
