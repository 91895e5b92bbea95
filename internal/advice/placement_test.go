package advice

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// ir is target t's headline row beside neighbour n in one packaging, with
// IR mean [lo, hi] in percent.
func ir(t, n, packaging string, mean, lo, hi float64) analysis.Row {
	m, ci := mean/100, [2]float64{lo / 100, hi / 100}
	return analysis.Row{
		Identity: analysis.Identity{
			Workload: t, Metric: "m", ID: result.MetricID{Metric: "m", Scope: result.ScopeTrial, Kind: result.KindMeasure},
			Cell: map[string]string{"neighbour": n, "packaging": packaging, "cpus": "none"},
		},
		Trials:     analysis.Trials{N: 3},
		VsBaseline: analysis.VsBaseline{IR: &m, IRCI95: &ci},
	}
}

const (
	in     = "same-container"
	beside = "separate-containers"
)

// The matrix of the tests: kinds A, B and C at a tolerance of 10%.
//
//	A+A one container, within.
//	A+B means within 10% in one container, but B beside A reaches −12%:
//	    the interval decides, not the mean — they share a host only.
//	A+C beyond in one container; on one host C beside A is −11% [−25, +3]:
//	    the mean is beyond but the interval is not — uncertain, so apart.
//	B+C and the rest: one container.
func matrixRows() []analysis.Row {
	alone := ir("A", "none", in, 0, 0, 0)
	alone.IR, alone.IRCI95 = nil, nil
	return []analysis.Row{
		alone,
		ir("A", "A", in, -2, -4, 0), ir("A", "B", in, -5, -8, -2), ir("B", "A", in, -6, -12, 0),
		ir("A", "C", in, -30, -40, -20), ir("C", "A", in, -25, -35, -15),
		ir("B", "B", in, -1, -3, 1), ir("B", "C", in, -4, -6, -2), ir("C", "B", in, -2, -4, 0), ir("C", "C", in, 0, -2, 2),
		ir("A", "A", beside, -1, -2, 0), ir("A", "B", beside, -3, -5, -1), ir("B", "A", beside, -2, -4, 0),
		ir("A", "C", beside, -3, -5, -1), ir("C", "A", beside, -11, -25, 3),
		ir("B", "B", beside, 0, -1, 1), ir("B", "C", beside, -1, -2, 0), ir("C", "B", beside, -1, -2, 0), ir("C", "C", beside, 0, -1, 1),
	}
}

func TestPairsJudgedWithIntervals(t *testing.T) {
	a, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]Level{
		{"A", "A"}: ShareContainer, {"A", "B"}: ShareHost, {"A", "C"}: Apart,
		{"B", "B"}: ShareContainer, {"B", "C"}: ShareContainer, {"C", "C"}: ShareContainer,
	}
	if len(a.Pairs) != len(want) {
		t.Errorf("%d pairs, want %d: %+v", len(a.Pairs), len(want), a.Pairs)
	}
	for k, lv := range want {
		p, ok := a.Level(k[1], k[0])
		if !ok || p.Level != lv {
			t.Errorf("%s + %s: %+v, want %s", k[0], k[1], p, lv)
		}
	}
	verdict := map[string]Verdict{}
	for _, j := range a.Judgements {
		verdict[j.Case+" "+j.Target+"|"+j.Neighbour] = j.Verdict
	}
	for k, v := range map[string]Verdict{
		"cpus=none packaging=same-container B|A":      Uncertain, // mean −6% within, interval to −12%
		"cpus=none packaging=same-container A|B":      Within,
		"cpus=none packaging=same-container A|C":      Beyond,
		"cpus=none packaging=separate-containers C|A": Uncertain, // mean −11% beyond, interval to +3%
	} {
		if verdict[k] != v {
			t.Errorf("%s: %s, want %s", k, verdict[k], v)
		}
	}
	if p, _ := a.Level("A", "B"); !strings.Contains(p.Why, "B beside A -6.0% [-12.0, +0.0] uncertain") {
		t.Errorf("A+B's reason %q: want the judgement that decided", p.Why)
	}
	if a.ContainerCase != "cpus=none packaging=same-container" || a.HostCase != "cpus=none packaging=separate-containers" {
		t.Errorf("cases %q, %q", a.ContainerCase, a.HostCase)
	}
	// A looser tolerance lets A and B share a container.
	loose, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.15})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := loose.Level("A", "B"); p.Level != ShareContainer {
		t.Errorf("at 15%%: A+B %s, want share-container", p.Level)
	}
}

// Four services: A cannot meet C on a host, A and B share a host but not
// a container. The fewest hosts is 2, and then 2 containers: the two A
// in one, B with C in another.
func TestPackingExact(t *testing.T) {
	svc := []Service{{"api", "A"}, {"db", "B"}, {"cache", "C"}, {"worker", "A"}}
	a, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.10, Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	p := a.Packing
	if p == nil || !p.Exact || len(p.Hosts) != 2 || p.Containers() != 2 {
		t.Fatalf("packing %+v: want 2 hosts of one container each, exact", p)
	}
	got := map[string]string{}
	for _, h := range p.Hosts {
		var names []string
		for _, s := range h.Containers[0].Services {
			names = append(names, s.Name)
		}
		for _, n := range names {
			got[n] = strings.Join(names, "+")
		}
	}
	if got["api"] != got["worker"] || got["db"] != got["cache"] || got["api"] == got["db"] {
		t.Errorf("containers %v: want api with worker, db with cache", got)
	}
	for _, h := range p.Hosts {
		for _, s := range h.Containers[0].Services {
			want := map[string]float64{"api": 4, "worker": 4, "db": 6, "cache": 4}[s.Name]
			if diff := s.PredictedSlowdownPct - want; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("%s: predicted %.3f%%, want %.0f%% (the worse end of its mate's interval)", s.Name, s.PredictedSlowdownPct, want)
			}
		}
	}
}

// The sum counts: with mates at 4% in a container and 2% on a host, a
// service in a container of k on a host of h loses 4(k−1) + 2(h−k)%.
// Seven A cannot share one host (2k+10 > 10); two hosts of 4 and 3 can,
// the 4 split 3+1 (at most 10%) and the 3 in one container (8%): 2 hosts,
// 3 containers, the optimum.
func TestPackingAddsSlowdowns(t *testing.T) {
	var svc []Service
	for i := 0; i < 7; i++ {
		svc = append(svc, Service{Name: string(rune('a' + i)), Kind: "A"})
	}
	a, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.10, Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, a, 10)
	if !a.Packing.Exact || len(a.Packing.Hosts) != 2 || a.Packing.Containers() != 3 {
		t.Errorf("packing of 7 A: %d hosts, %d containers, want 2 and 3", len(a.Packing.Hosts), a.Packing.Containers())
	}
}

// Beyond MaxExact services the packing is a greedy first fit, said so,
// and still keeps every service within the tolerance.
func TestPackingGreedy(t *testing.T) {
	var svc []Service
	for i := 0; i < MaxExact+4; i++ {
		svc = append(svc, Service{Name: "s" + string(rune('a'+i)), Kind: []string{"A", "B", "C"}[i%3]})
	}
	a, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.10, Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	if a.Packing.Exact || !strings.Contains(a.Packing.Algorithm, "first fit") {
		t.Errorf("algorithm %q exact %v: want the greedy one, not exact", a.Packing.Algorithm, a.Packing.Exact)
	}
	checkFeasible(t, a, 10)
}

// checkFeasible: every service placed once, no pair that may not meet
// meets, every prediction within the tolerance.
func checkFeasible(t *testing.T, a Advice, maxPct float64) {
	t.Helper()
	seen := map[string]int{}
	for _, h := range a.Packing.Hosts {
		for ci, c := range h.Containers {
			for _, s := range c.Services {
				seen[s.Name]++
				if s.PredictedSlowdownPct > maxPct+1e-9 {
					t.Errorf("%s predicted %.2f%% > %.0f%%", s.Name, s.PredictedSlowdownPct, maxPct)
				}
				for di, d := range h.Containers {
					for _, o := range d.Services {
						if o.Name == s.Name {
							continue
						}
						p, _ := a.Level(s.Kind, o.Kind)
						if p.Level == Apart || (di == ci && p.Level != ShareContainer) {
							t.Errorf("%s (%s) and %s (%s) meet but are %s", s.Name, s.Kind, o.Name, o.Kind, p.Level)
						}
					}
				}
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("nothing placed")
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("%s placed %d times", n, k)
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.1, Services: []Service{{"x", "Z"}}}); err == nil || !strings.Contains(err.Error(), "kinds: A, B, C") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0.1, Services: []Service{{"x", "A"}, {"x", "B"}}}); err == nil {
		t.Error("a service listed twice is an error")
	}
	if _, err := Advise("c1", []analysis.Row{ir("A", "none", in, 0, 0, 0)}, Options{MaxSlowdown: 0.1}); err != ErrNotColocation {
		t.Errorf("no neighbours: %v", err)
	}
	if _, err := Advise("c1", matrixRows(), Options{MaxSlowdown: 0}); err == nil {
		t.Error("a tolerance of 0 is an error")
	}
}

func BenchmarkPackExact(b *testing.B) {
	var svc []Service
	for i := 0; i < MaxExact; i++ {
		svc = append(svc, Service{Name: "s" + string(rune('a'+i)), Kind: []string{"A", "B", "C"}[i%3]})
	}
	rows := matrixRows()
	for b.Loop() {
		if _, err := Advise("c1", rows, Options{MaxSlowdown: 0.10, Services: svc}); err != nil {
			b.Fatal(err)
		}
	}
}
