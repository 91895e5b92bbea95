// Package workloads holds ctrbench's workload implementations; each file
// registers one workload type with the workload registry.
package workloads

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func init() {
	workload.Register(&workload.Spec{
		Type:    "cpu.primes",
		Summary: "sysbench-style prime search by trial division; every event tests each number below max_prime",
		Params: []workload.Param{
			workload.P("max_prime", workload.Int, "10000", "test numbers from 3 up to this bound in each event").Range(3, 1e8),
			workload.P("threads", workload.Int, "1", "worker threads, each locked to an OS thread").Range(1, 1024),
			workload.P("duration", workload.Duration, "5s", "measured time").Range(0.05, 86400),
		},
		Metrics:    primesMetrics,
		Histograms: []workload.Histogram{primesHistogram},
		Run:        map[string]workload.RunFunc{workload.Main: runPrimes},
		Smoke:      map[string]string{"duration": "300ms", "max_prime": "3000"},
	})
}

// primesHistogram declares the event times cpu.primes records.
var primesHistogram = durationHistogram("latency", "time of every event")

var primesMetrics = []workload.Metric{
	{Name: "events_per_sec", Unit: "events/s", Better: result.Higher, Doc: "completed events per second, all threads"},
	{Name: "latency_avg", Unit: "ms", Better: result.Lower, Doc: "mean time of one event", Combine: workload.MeanOf(primesHistogram.Name)},
	{Name: "latency_p95", Unit: "ms", Better: result.Lower, Doc: "95th percentile time of one event (HDR histogram, 3 significant digits)", Combine: workload.PercentileOf(primesHistogram.Name, 95)},
}

// primeEvent counts primes in [3, max) by trial division, as sysbench's cpu
// test does; the count is checked against a sieve so the work cannot be
// skipped or done wrong.
func primeEvent(max int) int {
	n := 0
	for c := 3; c < max; c++ {
		prime := true
		for d := 2; d*d <= c; d++ {
			if c%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			n++
		}
	}
	return n
}

// sievePrimes counts primes in [3, max) with a sieve of Eratosthenes.
func sievePrimes(max int) int {
	if max <= 3 {
		return 0
	}
	composite := make([]bool, max)
	n := 0
	for i := 2; i < max; i++ {
		if composite[i] {
			continue
		}
		if i >= 3 {
			n++
		}
		for j := i * i; j < max; j += i {
			composite[j] = true
		}
	}
	return n
}

func runPrimes(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	max := int(p.Int("max_prime"))
	threads := int(p.Int("threads"))
	dur := p.Duration("duration")
	want := sievePrimes(max)

	type worker struct {
		lat []time.Duration
		bad int
	}
	workers := make([]worker, threads)
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					return
				}
				if got := primeEvent(max); got != want {
					w.bad++
				}
				w.lat = append(w.lat, time.Since(t0))
			}
		}(&workers[i])
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	events := newDurations(primesHistogram, longMax)
	bad := 0
	for _, w := range workers {
		for _, d := range w.lat {
			events.Record(d)
		}
		bad += w.bad
	}
	if bad > 0 {
		return nil, "", fmt.Errorf("validation: %d events counted a wrong number of primes below %d (want %d)", bad, max, want)
	}
	if events.Count() == 0 {
		return nil, "", fmt.Errorf("no event completed within %s; lower max_prime or raise duration", dur)
	}
	if err := events.keep(env); err != nil {
		return nil, "", err
	}
	obs := []result.Observation{{Metric: "events_per_sec", Value: float64(events.Count()) / elapsed.Seconds(), Unit: "events/s", Better: result.Higher}}
	return append(obs, events.Observations(primesMetrics)...), "", nil
}
