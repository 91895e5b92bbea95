package runner

import (
	"math"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Each entity's phases are durations that add up to its total; the trial
// has the makespan, nearest-rank statistics over the entities, the engine's
// phases beside ctrbench's, and the slowest entity's phases.
func TestLifecycleObservations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	ent := func(off, create, start, ready, exit, remove int) entity {
		return entity{
			timings: platform.Timings{Requested: ms(off), At: map[vocab.Phase]time.Time{
				vocab.Create: ms(off + create), vocab.Start: ms(off + start), vocab.Ready: ms(off + ready), vocab.Exit: ms(off + exit), vocab.Remove: ms(off + remove)}},
			engine: map[vocab.Phase]time.Time{vocab.Create: ms(off + create - 1), vocab.Start: ms(off + start - 1)},
			obs:    []result.Observation{{Metric: "command_s", Value: 0.001, Unit: "s"}},
		}
	}
	ents := []entity{ent(0, 10, 50, 60, 70, 100), ent(5, 20, 80, 90, 300, 400), ent(2, 10, 40, 45, 50, 60)}
	obs := lifecycleObservations(ents)
	got := map[string]float64{}
	for _, o := range obs {
		got[o.ID().String()] = o.Value
	}
	near := func(name string, want float64) {
		t.Helper()
		if v, ok := got[name]; !ok || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	for i := 1; i <= 3; i++ {
		sum := 0.0
		for _, ph := range vocab.Phases {
			sum += got["instance"+string(rune('0'+i))+".lifecycle."+string(ph)]
		}
		near("instance"+string(rune('0'+i))+".lifecycle.total", sum)
	}
	near("instance2.lifecycle.start", 0.060)
	near("instance2.lifecycle.engine_create", 0.019)
	near("instance2.lifecycle.engine_start", 0.060)
	near("instance3.command_s", 0.001)
	near("makespan", 0.305) // first asked for at 0 ms, last exit at 305 ms
	near("span", 0.405)     // ... last removal at 405 ms
	near("total_p50", 0.100)
	near("total_max", 0.400)
	near("total_p99", 0.400)
	near("exit_p50", 0.010)
	near("lifecycle.slowest_exit", 0.210)
	near("lifecycle.slowest_remove", 0.100)
	for name := range got {
		if len(name) > 5 && name[:5] == "pair1" {
			t.Errorf("an entity named as a pair: %s", name)
		}
	}
}

// One entity: its observations are the trial's own.
func TestLifecycleOneEntity(t *testing.T) {
	t0 := time.Unix(1000, 0)
	e := entity{timings: platform.Timings{Requested: t0, At: map[vocab.Phase]time.Time{vocab.Start: t0.Add(time.Second), vocab.Exit: t0.Add(2 * time.Second)}}}
	for _, o := range lifecycleObservations([]entity{e}) {
		if o.Scope != "" && o.Scope != result.ScopeTrial && o.Scope != result.ScopeAggregate {
			t.Errorf("%s has scope %s", o.ID(), o.Scope)
		}
		if o.Metric == "create_p50" {
			t.Errorf("a phase the platform did not time has a statistic")
		}
	}
}
