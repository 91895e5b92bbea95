package analysis

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// pairsCampaign is pairs 1 and 3 on two platforms, native the baseline,
// with the trials' observations in an order unlike the declared one.
func pairsCampaign() *Memory {
	var m trialMaker
	cells := []result.Cell{
		cell(1, map[string]string{"platform": "native", "pairs": "1"}),
		cell(2, map[string]string{"platform": "docker", "pairs": "1"}),
		cell(3, map[string]string{"platform": "native", "pairs": "3"}),
		cell(4, map[string]string{"platform": "docker", "pairs": "3"}),
	}
	single := func(c int, tp, lat float64) result.Trial {
		return m.ok(c, ob(cpuSeconds, 0.5), ob(latency, lat), ob(serverTp, tp+1), ob(throughput, tp))
	}
	multi := func(c int, tp float64) result.Trial {
		return m.ok(c, ob(aggregate, tp), ob(jain, 0.9), ob(pair1, tp/2), ob(pair2, tp/2), ob(pair2CPU, 1))
	}
	warm := single(2, 1000, 1000)
	warm.Warmup = true
	flagged := single(2, 7, 2)
	flagged.Flags = "neighbours covered 80%"
	trials := []result.Trial{
		single(1, 10, 1), warm, single(2, 5, 2), multi(3, 30), m.failed(2, "boom"),
		multi(4, 15), single(1, 12, 1), flagged, multi(3, 34), multi(4, 17), single(2, 6, 2),
	}
	camp := result.Campaign{ID: "c", Baseline: map[string]string{"platform": "native"}}
	return NewMemory(camp, cells, trials)
}

// Trials group into one series per cell and metric identity: declared
// metrics first, in the workload's order, then the others as first seen;
// warm-ups left out, failures counted, a flagged trial counted and its
// values set apart, the baseline cell's values beside each.
func TestLoadGroupsByIdentity(t *testing.T) {
	l := load(t, pairsCampaign())
	var got []result.MetricID
	for _, s := range l.Series {
		if s.CellID == 1 {
			got = append(got, s.ID)
		}
	}
	if want := []result.MetricID{throughput, latency, cpuSeconds, serverTp}; !slices.Equal(got, want) {
		t.Errorf("cell 1 metrics %v, want %v", got, want)
	}
	got = nil
	for _, s := range l.Series {
		if s.CellID == 3 {
			got = append(got, s.ID)
		}
	}
	// The pairs' aggregate stands where the declared metric does.
	if want := []result.MetricID{aggregate, jain, pair1, pair2, pair2CPU}; !slices.Equal(got, want) {
		t.Errorf("cell 3 metrics %v, want %v", got, want)
	}

	docker := series(t, l, 2, throughput)
	// In run order, without the warm-up; the flagged trial apart.
	if want := []float64{5, 6}; !slices.Equal(docker.Values, want) || !slices.Equal(docker.Seqs, []int{4, 11}) {
		t.Errorf("cell 2 values %v (seqs %v), want %v (no warm-up, no flagged trial)", docker.Values, docker.Seqs, want)
	}
	if !slices.Equal(docker.FlaggedValues, []float64{7}) || !slices.Equal(docker.FlaggedSeqs, []int{2}) {
		t.Errorf("cell 2 flagged values %v (seqs %v), want [7] (seq 2)", docker.FlaggedValues, docker.FlaggedSeqs)
	}
	if docker.Failed != 1 || docker.Flagged != 1 || docker.IsBaseline {
		t.Errorf("cell 2: failed %d flagged %d baseline %v", docker.Failed, docker.Flagged, docker.IsBaseline)
	}
	if want := []float64{10, 12}; !slices.Equal(docker.Baseline, want) {
		t.Errorf("cell 2 baseline values %v, want cell 1's %v", docker.Baseline, want)
	}
	if docker.Unit != "u" || docker.Better != result.Higher || docker.Workload != "tcp" || docker.Cell["platform"] != "docker" {
		t.Errorf("cell 2 series %+v", docker)
	}
	if s := series(t, l, 1, throughput); !s.IsBaseline || s.Baseline != nil {
		t.Errorf("cell 1 is the baseline: %+v", s)
	}
	if s := series(t, l, 4, aggregate); !slices.Equal(s.Values, []float64{15, 17}) || !slices.Equal(s.Baseline, []float64{30, 34}) {
		t.Errorf("cell 4 aggregate %v against %v, want [15 17] against cell 3's [30 34]", s.Values, s.Baseline)
	}
	if s := series(t, l, 4, pair2CPU); s.Interference || s.ID.Role != "server" {
		t.Errorf("cell 4 pair 2 server telemetry %+v", s)
	}
}

// Rows keep a trial's own value and the pairs' aggregate as one metric:
// the four cells' throughput rows come together, each with its identity.
func TestRowsOrderAndValues(t *testing.T) {
	rows := Rows(load(t, pairsCampaign()).Series)
	var got []string
	for _, r := range rows[:6] {
		got = append(got, r.Metric+"/"+r.Cell["platform"]+"/"+r.Cell["pairs"])
	}
	want := []string{
		"throughput/native/1", "throughput/docker/1", "throughput/native/3", "throughput/docker/3",
		"latency/native/1", "latency/docker/1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if rows[0].ID != throughput || rows[2].ID != aggregate {
		t.Errorf("row identities %v, %v", rows[0].ID, rows[2].ID)
	}
	docker := rows[1]
	if docker.N != 2 || docker.Mean != 5.5 || docker.Failed != 1 || docker.Flagged != 1 || docker.FlaggedMean == nil || *docker.FlaggedMean != 7 {
		t.Errorf("docker row %+v", docker)
	}
	if docker.VsBaselinePct == nil || math.Abs(*docker.VsBaselinePct-(-50)) > 1e-9 {
		t.Errorf("docker vs native: %v, want -50%%", docker.VsBaselinePct)
	}
	if !rows[0].Baseline || rows[0].VsBaselinePct != nil {
		t.Errorf("baseline row %+v", rows[0])
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Metric)
	}
	if !slices.Contains(names, "pair2.server.telemetry.cpu_seconds") || !slices.Contains(names, "pairs.jain") {
		t.Errorf("rows print identities as reports name them: %v", names)
	}
}

// --baseline factor=level compares against another cell; a level no cell
// ran, or no factor=level at all, is a typed error naming the override.
func TestBaselineOverride(t *testing.T) {
	src := pairsCampaign()
	l := load(t, src, "platform=docker")
	if l.Campaign.Baseline["platform"] != "docker" {
		t.Errorf("baseline %v", l.Campaign.Baseline)
	}
	native := series(t, l, 1, throughput)
	if native.IsBaseline || !slices.Equal(native.Baseline, []float64{5, 6}) {
		t.Errorf("native against docker: %+v", native)
	}
	if c, _ := src.Campaign(context.Background(), "c"); c.Baseline["platform"] != "native" {
		t.Errorf("the override changed the source's campaign: %v", c.Baseline)
	}
	for _, bad := range []string{"platform=kvm", "platform", "nosuch=native"} {
		_, err := Load(context.Background(), src, Query{Campaign: "c", Baseline: []string{"pairs=3", bad}})
		var be *BaselineError
		if !errors.As(err, &be) || be.Override != bad {
			t.Errorf("override %q: err %v, want a *BaselineError naming it", bad, err)
		}
	}
}

// A cell whose every trial failed still has a row: the workload's first
// metric, its unit and direction, no values, the failures counted.
func TestAllFailedCell(t *testing.T) {
	var m trialMaker
	cells := []result.Cell{cell(1, map[string]string{"platform": "native"}), cell(2, map[string]string{"platform": "docker"})}
	trials := []result.Trial{m.ok(1, ob(throughput, 3)), m.failed(2, "no"), m.failed(2, "no")}
	l := load(t, NewMemory(result.Campaign{ID: "c", Baseline: map[string]string{"platform": "native"}}, cells, trials))
	s := series(t, l, 2, throughput)
	if s.Values != nil || s.Failed != 2 || s.Unit != "Gbit/s" || s.Better != result.Higher || !slices.Equal(s.Baseline, []float64{3}) {
		t.Errorf("failed cell %+v", s)
	}
	if len(l.Series) != 2 {
		t.Errorf("%d series, want 2", len(l.Series))
	}
	r := Rows(l.Series)[1]
	if r.N != 0 || r.Failed != 2 || r.Metric != "throughput" || r.VsBaselinePct != nil {
		t.Errorf("failed cell row %+v", r)
	}
}

// A cell with neighbours carries S0's interference ratio against the
// target alone.
func TestInterferenceAgainstTargetAlone(t *testing.T) {
	var m trialMaker
	cells := []result.Cell{
		cell(1, map[string]string{"neighbour": "none"}),
		cell(2, map[string]string{"neighbour": "cpu"}),
	}
	var trials []result.Trial
	for _, v := range []float64{100, 101, 99} {
		trials = append(trials, m.ok(1, ob(throughput, v)), m.ok(2, ob(throughput, v/2), ob(overlap, 99)))
	}
	l := load(t, NewMemory(result.Campaign{ID: "c", Baseline: map[string]string{"neighbour": "none"}}, cells, trials))
	if series(t, l, 1, throughput).Interference || !series(t, l, 2, throughput).Interference {
		t.Error("only the cell with neighbours is marked")
	}
	rows := Rows(l.Series)
	if rows[1].IR == nil || math.Abs(*rows[1].IR-(-0.5)) > 1e-9 {
		t.Errorf("halved beside a neighbour: IR %v, want -0.5", rows[1].IR)
	}
	if rows[2].Metric != "neighbour.overlap_pct" || rows[2].ID != overlap {
		t.Errorf("neighbour's row %+v", rows[2])
	}
}

func TestSameMetric(t *testing.T) {
	for _, c := range []struct {
		a, b result.MetricID
		want bool
	}{
		{throughput, aggregate, true},
		{throughput, throughput, true},
		{throughput, serverTp, false},
		{throughput, pair1, false},
		{pair1, pair2, false},
		{cpuSeconds, neighCPU, false},
	} {
		if got := SameMetric(c.a, c.b); got != c.want {
			t.Errorf("SameMetric(%v, %v) = %v", c.a, c.b, got)
		}
	}
}

// Two workloads may name a metric alike in different units (net.tcp_rr's
// latency_p50 in µs, http.get's in ms): each series keeps its own cell's
// unit and direction, never the campaign's last.
func TestUnitsArePerCell(t *testing.T) {
	m := &trialMaker{}
	p50 := func(v float64, unit string) result.Observation {
		return result.Observation{Metric: "latency_p50", Value: v, Unit: unit, Better: result.Lower}
	}
	cells := []result.Cell{
		{ID: 1, Workload: "rr", WorkloadType: "net.tcp_rr", Factors: map[string]string{}},
		{ID: 2, Workload: "get", WorkloadType: "http.get", Factors: map[string]string{}},
	}
	trials := []result.Trial{m.ok(1, p50(23, "µs")), m.ok(2, p50(0.2, "ms"))}
	l := load(t, NewMemory(result.Campaign{ID: "c"}, cells, trials))
	id := result.MetricID{Metric: "latency_p50", Scope: result.ScopeTrial, Kind: result.KindMeasure}
	if u := series(t, l, 1, id).Unit; u != "µs" {
		t.Errorf("net.tcp_rr's latency_p50 in %q, want µs", u)
	}
	if u := series(t, l, 2, id).Unit; u != "ms" {
		t.Errorf("http.get's latency_p50 in %q, want ms", u)
	}
}
