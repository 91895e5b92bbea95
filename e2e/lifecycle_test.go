package e2e

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestLifecycle is S1's Exp 2 in small: 1 and 3 hosting entities created at
// once on native and docker, each running sysbench with max prime 1. Every
// entity's phases add up to its total; docker has the engine's own
// timestamps beside ctrbench's; the makespan and span cover the entities'
// lives.
func TestLifecycle(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-lifecycle
seed: 3
repetitions: 2
factors:
  platform: [native, docker]
  instances: [1, 3]
workloads:
  - {name: create, type: lifecycle.run, params: {command: sysbench}}
`)
	trials := storedTrials(t, db, id)
	if len(trials) != 8 {
		t.Fatalf("%d trials, want 8", len(trials))
	}
	for _, tr := range trials {
		cellOf := fmt.Sprintf("trial %d (cell %d)", tr.Seq, tr.CellID)
		phases := map[string]map[string]float64{} // entity prefix -> metric -> value
		measures := map[string]float64{}
		for _, o := range tr.Observations {
			name := o.ID().String()
			if prefix, metric, ok := strings.Cut(name, "lifecycle."); ok {
				if phases[prefix] == nil {
					phases[prefix] = map[string]float64{}
				}
				phases[prefix][metric] = o.Value
			} else {
				measures[name] = o.Value
			}
		}
		entities := 0
		toExit := 0.0 // the longest time from an entity's request to its exit
		for prefix, m := range phases {
			if _, ok := m["total"]; !ok {
				continue // the slowest entity's phases
			}
			entities++
			sum := 0.0
			for _, ph := range []string{"create", "start", "ready", "exit", "remove"} {
				sum += m[ph]
			}
			if math.Abs(sum-m["total"]) > 1e-6 {
				t.Errorf("%s %s: phases add up to %v, total %v", cellOf, prefix, sum, m["total"])
			}
			toExit = max(toExit, m["total"]-m["remove"])
			if m["total"] <= 0 || m["total"] > 60 {
				t.Errorf("%s %s: total %v s", cellOf, prefix, m["total"])
			}
			if _, docker := m["create"]; docker {
				for _, ph := range []string{"engine_create", "engine_start", "engine_exit", "engine_remove"} {
					if _, ok := m[ph]; !ok {
						t.Errorf("%s %s: a container without the engine's %s (%v)", cellOf, prefix, ph, m)
					}
				}
			}
		}
		if entities != 1 && entities != 3 {
			t.Errorf("%s: %d entities' phases, want 1 or 3", cellOf, entities)
		}
		// The makespan runs from the first request to the last exit, the
		// span to the last removal: identities of the timestamps, whatever
		// the machine's load did to when each entity was asked for (one
		// entity's makespan is its life to its exit).
		mk := measures["makespan"]
		span, ok := measures["span"]
		if !ok { // no entity with a removal: the span is the makespan
			span = mk
		}
		switch {
		case mk < toExit-1e-6 || mk > span+1e-6 || span < measures["total_max"]-1e-6:
			t.Errorf("%s: makespan %v, span %v, longest life to exit %v, longest total %v: want life to exit <= makespan <= span, total <= span", cellOf, mk, span, toExit, measures["total_max"])
		case entities == 1 && math.Abs(mk-toExit) > 1e-6:
			t.Errorf("%s: one entity's makespan %v, its life to its exit %v", cellOf, mk, toExit)
		}
		if !(measures["total_p50"] <= measures["total_p99"] && measures["total_p99"] <= measures["total_max"]) {
			t.Errorf("%s: total p50 %v, p99 %v, max %v out of order", cellOf, measures["total_p50"], measures["total_p99"], measures["total_max"])
		}
	}
}
