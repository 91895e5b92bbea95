package workloads

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var sysbenchTool = workload.Tool{Binary: "sysbench", Package: "sysbench"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "cpu.sysbench",
		Summary: "sysbench cpu: prime search by trial division up to max_prime per event (S1's CPU test)",
		Params: []workload.Param{
			workload.P("max_prime", workload.Int, "10000", "test numbers up to this bound in each event (--cpu-max-prime); S1 used 40000").Range(3, 1e8),
			workload.P("threads", workload.Int, "1", "worker threads (--threads)").Range(1, 1024),
			workload.P("duration", workload.Duration, "5s", "measured time (--time); sysbench takes whole seconds, so it is rounded up").Range(1, 86400),
		},
		Metrics: []workload.Metric{
			{Name: "events_per_sec", Unit: "events/s", Better: result.Higher, Doc: "completed events per second, all threads (sysbench's \"events per second\")"},
			{Name: "latency_avg", Unit: "ms", Better: result.Lower, Doc: "mean time of one event: latency sum ÷ events"},
			{Name: "latency_p95", Unit: "ms", Better: result.Lower, Doc: "95th percentile time of one event, from sysbench's latency histogram", Combine: workload.PairsOnly},
		},
		Tools: []workload.Tool{sysbenchTool},
		Run:   map[string]workload.RunFunc{workload.Main: runSysbenchCPU},
		Smoke: map[string]string{"duration": "1s", "max_prime": "10000"},
	})
}

// sysbenchSeconds is a duration parameter as sysbench's --time: whole
// seconds, rounded up.
func sysbenchSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

func runSysbenchCPU(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(sysbenchTool)
	if err != nil {
		return nil, "", err
	}
	secs := sysbenchSeconds(p.Duration("duration"))
	args := []string{"cpu",
		"--cpu-max-prime=" + p.String("max_prime"),
		"--threads=" + p.String("threads"),
		"--time=" + strconv.Itoa(secs),
		"--events=0", "--percentile=95", "--histogram=on",
		"run"}
	// sysbench stops itself at --time; the margin only catches a hang.
	cctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+time.Minute)
	defer cancel()
	stdout, raw, runErr := runTool(cctx, path, args...)
	if runErr != nil {
		return nil, raw, runErr
	}
	return parseSysbenchCPU(string(stdout), p.Int("max_prime"), p.Int("threads"))
}

// parseSysbenchCPU checks and converts the report of `sysbench cpu run`.
// On any failure the whole output is returned for the record.
func parseSysbenchCPU(out string, maxPrime, threads int64) ([]result.Observation, string, error) {
	fail := func(err error) ([]result.Observation, string, error) { return nil, out, err }
	r := parseSysbench(out)
	if !r.has(fmt.Sprintf("Prime numbers limit: %d", maxPrime)) {
		return fail(fmt.Errorf("sysbench output does not say \"Prime numbers limit: %d\": not the cpu test asked for", maxPrime))
	}
	if !r.has(fmt.Sprintf("Number of threads: %d", threads)) {
		return fail(fmt.Errorf("sysbench output does not say \"Number of threads: %d\"", threads))
	}
	seconds, events, err := r.general()
	if err != nil {
		return fail(err)
	}
	eps, err := r.num("CPU speed", "events per second", "")
	if err != nil {
		return fail(err)
	}
	// sysbench divides by the time its threads ran, near the total time
	// (5.2% apart, either way, seen for a 1 s run on a busy machine: a
	// stalled thread's time is not the run's); apart by half or more, the
	// numbers are not one run's.
	if implied := events / seconds; !agrees(eps, implied, 0.5, 0.01) {
		return fail(fmt.Errorf("sysbench prints %.2f events/s, but %.0f events in %.4f s are %.2f/s (more than 50%% apart: not one run's numbers)", eps, events, seconds, implied))
	}
	avg, p95, err := r.latency(events)
	if err != nil {
		return fail(err)
	}
	return []result.Observation{
		{Metric: "events_per_sec", Value: eps, Unit: "events/s", Better: result.Higher},
		{Metric: "latency_avg", Value: avg, Unit: "ms", Better: result.Lower},
		{Metric: "latency_p95", Value: p95, Unit: "ms", Better: result.Lower},
	}, "", nil
}
