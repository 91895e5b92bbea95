package workload

import (
	"testing"
	"time"
)

// A run's time comes from its Work where that gives one (with its basis),
// else from Measures, else from its duration parameter; nothing, for a
// workload none of them times.
func TestRunTime(t *testing.T) {
	work := &Work{Basis: "n units at 1 a second, a CPU", Time: func(p Values, cpus int) (time.Duration, bool) {
		if p.Int("n") == 0 {
			return 0, false // the duration gives it
		}
		return time.Duration(p.Int("n")) * time.Second / time.Duration(cpus), true
	}}
	measures := func(p map[string]string) (time.Duration, bool) {
		d, err := time.ParseDuration(p["runtime"])
		return 4 * d, err == nil && d > 0
	}
	for _, c := range []struct {
		name   string
		spec   Spec
		params map[string]string
		cpus   int
		want   RunTime
		ok     bool
	}{
		{"duration", Spec{}, map[string]string{"duration": "3s"}, 1, RunTime{Time: 3 * time.Second}, true},
		{"duration 0", Spec{}, map[string]string{"duration": "0s"}, 1, RunTime{}, false},
		{"no duration", Spec{}, map[string]string{"command": "[true]"}, 1, RunTime{}, false},
		{"measures", Spec{Trial: Trial{Measures: measures}}, map[string]string{"runtime": "2s"}, 1, RunTime{Time: 8 * time.Second}, true},
		{"work", Spec{Trial: Trial{Work: work}}, map[string]string{"n": "6"}, 2, RunTime{Time: 3 * time.Second, Basis: work.Basis}, true},
		{"work, no CPUs said", Spec{Trial: Trial{Work: work}}, map[string]string{"n": "6"}, 0, RunTime{Time: 6 * time.Second, Basis: work.Basis}, true},
		{"work gives way", Spec{Trial: Trial{Work: work}}, map[string]string{"n": "0", "duration": "5s"}, 2, RunTime{Time: 5 * time.Second}, true},
	} {
		got, ok := c.spec.RunTime(c.params, c.cpus)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
