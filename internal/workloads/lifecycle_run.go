package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Commands of lifecycle.run: what each hosting entity runs between its
// start and its exit.
const (
	lifecycleNoop     = "noop"     // nothing: the agent says it is up and exits
	lifecycleSysbench = "sysbench" // sysbench cpu with max prime 1, one event, as S1 did
)

func init() {
	metrics := []workload.Metric{
		{Name: "makespan", Unit: "s", Better: result.Lower, Doc: "from the first entity asked for to the last one's exit"},
		{Name: "span", Unit: "s", Better: result.Lower, Doc: "from the first entity asked for to the last one removed: the whole fan-out"},
		{Name: "command_s", Unit: "s", Better: result.Lower, Doc: "how long the command took inside the entity (each entity's own)"},
	}
	stat := func(what, doc string) {
		for _, q := range []struct{ suffix, doc string }{{"p50", "median"}, {"p99", "99th percentile (nearest rank)"}, {"max", "maximum"}} {
			metrics = append(metrics, workload.Metric{Name: what + "_" + q.suffix, Unit: "s", Better: result.Lower,
				Doc: q.doc + " over the trial's entities of " + doc, Combine: workload.PairsOnly})
		}
	}
	stat("total", "the time from asking for an entity to its removal (the sum of its phases)")
	for _, ph := range vocab.Phases {
		stat(string(ph), "its "+string(ph)+" phase: "+ph.Doc())
	}
	workload.Register(&workload.Spec{
		Type:    "lifecycle.run",
		Summary: "creation time: `instances` hosting entities created at once, each running a near-empty command, exiting and removed; the phases of each timed (S1 Exps 2 and 3)",
		Params: []workload.Param{
			workload.P("command", workload.Enum, lifecycleNoop, "what each entity runs: nothing, or sysbench cpu with max prime 1 and one event (S1)").OneOf(lifecycleNoop, lifecycleSysbench),
		},
		Metrics: metrics,
		Tools:   []workload.Tool{sysbenchTool},
		Run:     map[string]workload.RunFunc{workload.Main: runLifecycle},
		Smoke:   map[string]string{},
		Trial: workload.Trial{
			Lifecycle: true,
			// What a trial takes is its entities' lives: their start and stop,
			// which the estimate counts with every instance.
			Work: &workload.Work{
				Basis: "nothing beyond its entities' start and stop, counted with the instances",
				Time:  func(workload.Values, int) (time.Duration, bool) { return 0, true },
			},
		},
	})
}

// runLifecycle is one entity's life: it says it is up (the ready phase),
// runs the command, and reports how long the command took.
func runLifecycle(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	if env.Ready != nil {
		env.Ready("")
	}
	start := time.Now()
	if p.String("command") == lifecycleSysbench {
		path, err := lookTool(sysbenchTool)
		if err != nil {
			return nil, "", err
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		stdout, out, err := runTool(cctx, path, "cpu", "--cpu-max-prime=1", "--threads=1", "--events=1", "--time=0", "run")
		if err != nil {
			return nil, out, err
		}
		if err := checkSysbenchNoop(string(stdout)); err != nil {
			return nil, out, err
		}
	}
	return []result.Observation{{Metric: "command_s", Value: time.Since(start).Seconds(), Unit: "s", Better: result.Lower}}, "", nil
}

// checkSysbenchNoop checks that sysbench ran the near-empty test asked
// for: max prime 1, one event. Its time is 0.0000 s, so it is not read.
func checkSysbenchNoop(out string) error {
	r := parseSysbench(out)
	if !r.has("Prime numbers limit: 1") {
		return fmt.Errorf("sysbench output does not say \"Prime numbers limit: 1\"")
	}
	events, err := r.num("General statistics", "total number of events", "")
	if err != nil {
		return err
	}
	if events != 1 {
		return fmt.Errorf("sysbench ran %v events, want the one asked for", events)
	}
	return nil
}
