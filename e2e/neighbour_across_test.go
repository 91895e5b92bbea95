package e2e

import (
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Issue 29: S0's network neighbour N crossed the bridge between two
// containers. With packaging separate-containers a client/server
// neighbour now runs its server and its client in two containers of the
// cell's network, the client reaching the server across Docker's bridge:
// the trial is ok, both ends looped through the target's window (two
// neighbour reports), and the client's own namespace sent TCP segments
// over that window — it has no server of its own to talk to over
// loopback, so they crossed the bridge.
func TestNeighbourAcrossTheBridge(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-n-across
seed: 18
repetitions: 1
warmup: 0
factors:
  platform: [docker]
  network: [bridge]
  neighbour: [N]
  packaging: [separate-containers]
exclude:
  - {workload: N}
workloads:
  - {name: T, type: cpu.primes, params: {duration: 2s, max_prime: 5000}}
  - {name: N, type: net.tcp_stream, params: {duration: 1s}}
`)
	cells := cellFactors(t, db, id)
	var tr result.Trial
	for _, x := range storedTrials(t, db, id) {
		if cells[x.CellID]["neighbour"] == "N" {
			tr = x
		}
	}
	if tr.Status != "ok" {
		t.Fatalf("trial: %s %s", tr.Status, tr.Error)
	}
	nb := map[int]map[string]float64{}
	for _, o := range tr.Observations {
		if o.Scope == result.ScopeNeighbour {
			if nb[o.Index] == nil {
				nb[o.Index] = map[string]float64{}
			}
			nb[o.Index][o.Metric] = o.Value
		}
	}
	t.Logf("neighbour observations: %v", nb)
	if nb[0]["overlap_pct"] < 95 || nb[0]["iterations"] < 2 {
		t.Errorf("the two ends did not loop through the window: %v", nb[0])
	}
	if nb[1] == nil || nb[2] == nil || nb[3] != nil {
		t.Fatalf("want two neighbour ends (server, client), got %v", nb)
	}
	if nb[2]["tcp_out_segs"] <= 0 {
		t.Errorf("the client end's namespace sent no TCP segments over the window: %v", nb[2])
	}
}
