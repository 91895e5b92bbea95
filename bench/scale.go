package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
	"github.com/ctrbench/ctrbench/internal/spec"
)

// scaleExperiment is one trial of %d tcp_stream pairs on Docker's bridge.
const scaleExperiment = `name: bench-scale
seed: 13
repetitions: 1
timeout: 10m
factors:
  platform: docker
  network: bridge
  pairs: [%d]
workloads:
  - {name: stream, type: net.tcp_stream, params: {duration: %s}}
`

// cpuSample is the CPU time used so far by this process (the harness:
// ctrbench's orchestrator, in this process as in `ctrbench run`) and by
// the engine (dockerd and containerd; the per-container shims are left
// out), at one moment.
type cpuSample struct {
	at           time.Time
	self, engine time.Duration
}

// sampler reads the CPU times every period until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []cpuSample
	engine  []int
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(period time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), engine: pidsOf("dockerd", "containerd")}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			s.take()
			select {
			case <-s.stop:
				s.take()
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) take() {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	smp := cpuSample{at: time.Now(), self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	for _, pid := range s.engine {
		smp.engine += procCPU(pid)
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

func (s *sampler) Stop() []cpuSample {
	close(s.stop)
	<-s.done
	return s.samples
}

// between is the CPU time used from a to b, read from the samples that
// enclose the window (so at most one sampling period wider on each side).
func between(samples []cpuSample, a, b time.Time) (self, engine, span time.Duration, ok bool) {
	var lo, hi *cpuSample
	for i := range samples {
		if !samples[i].at.After(a) {
			lo = &samples[i]
		}
		if hi == nil && !samples[i].at.Before(b) {
			hi = &samples[i]
		}
	}
	if lo == nil || hi == nil {
		return 0, 0, 0, false
	}
	return hi.self - lo.self, hi.engine - lo.engine, hi.at.Sub(lo.at), true
}

// procCPU is a process's user and system time from /proc (clock ticks of
// 1/100 s, as on every Linux this runs on).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// pidsOf lists the processes with these command names.
func pidsOf(names ...string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.TrimSpace(string(comm)) == n {
				pid, _ := strconv.Atoi(filepath.Base(d))
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// scaleTrial is what one many-pair trial took.
type scaleTrial struct {
	pairs                  int
	setup, run, teardown   time.Duration
	overlap, throughput    float64
	selfShare, engineShare float64 // of the machine (all CPUs) during the run
	left, entities         int     // containers, networks and volumes left; containers run
}

// scaleRun runs one trial of n tcp_stream pairs on the bridge, in this
// process, and splits its time into set-up (from the trial's start to the
// first client's measured run), the run, and tear-down (from the last
// client's end until every container is removed), with the harness's and
// the engine's CPU use during the run.
func scaleRun(ctx context.Context, bin string, n int, dur string) (scaleTrial, error) {
	st := scaleTrial{pairs: n}
	e, err := spec.Parse("bench-scale.yaml", []byte(fmt.Sprintf(scaleExperiment, n, dur)), nil, spec.Machine{})
	if err != nil {
		return st, err
	}
	cells := e.Cells()
	id := fmt.Sprintf("bench-scale-%d-%d", os.Getpid(), n)
	var trials []result.Trial
	smp := startSampler(100 * time.Millisecond)
	_, err = orchestrator.Run(ctx, orchestrator.Config{
		Experiment: e, CampaignID: id, Cells: cells, Binary: bin,
		Sink:     func(_ context.Context, t result.Trial) error { trials = append(trials, t); return nil },
		Progress: orchestrator.NewProgress(os.Stderr, false),
	})
	samples := smp.Stop()
	if err != nil {
		return st, err
	}
	src := analysis.NewMemory(result.Campaign{ID: id}, cells, trials)
	if f, err := analysis.LoadFailures(ctx, src, id); err == nil && len(f.Trials) > 0 {
		return st, fmt.Errorf("%d pairs: %s", n, f.Trials[0].Error)
	}
	if len(trials) != 1 {
		return st, fmt.Errorf("%d pairs: %d trials, want 1", n, len(trials))
	}
	t := trials[0]
	runStart, err1 := time.Parse(time.RFC3339Nano, t.Seen[runner.SeenRunStarted])
	runEnd, err2 := time.Parse(time.RFC3339Nano, t.Seen[runner.SeenRunEnded])
	if err1 != nil || err2 != nil {
		return st, fmt.Errorf("%d pairs: the trial has no run window: %v %v", n, err1, err2)
	}
	st.setup, st.run, st.teardown = runStart.Sub(t.Started), runEnd.Sub(runStart), t.Ended.Sub(runEnd)
	for _, o := range t.Observations {
		switch o.ID().String() {
		case "pairs.overlap_pct":
			st.overlap = o.Value
		case "throughput":
			st.throughput = o.Value
		}
	}
	st.entities, _ = strconv.Atoi(t.Seen["placement.entities"])
	self, engineCPU, span, ok := between(samples, runStart, runEnd)
	if !ok {
		return st, fmt.Errorf("%d pairs: no CPU samples around the run", n)
	}
	machine := float64(span) * float64(runtime.NumCPU())
	st.selfShare, st.engineShare = 100*float64(self)/machine, 100*float64(engineCPU)/machine
	left, err := engine.Leftovers(ctx, id)
	if err != nil {
		return st, err
	}
	st.left = len(left.Containers) + len(left.Networks) + len(left.Volumes)
	return st, nil
}

// scale runs a trial of each size in sizes and prints how its time split
// and what the harness cost while the workload ran.
func scale(ctx context.Context, bin string, sizes []int, dur string) error {
	var rows []scaleTrial
	for _, n := range sizes {
		st, err := scaleRun(ctx, bin, n, dur)
		if err != nil {
			return err
		}
		rows = append(rows, st)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "\nmany pairs at once: one tcp_stream trial of %s on Docker's bridge per size (%d CPUs)\n", dur, runtime.NumCPU())
	fmt.Fprintln(w, "pairs\tcontainers\tset-up\trun\ttear-down\toverlap (>= 90%)\tthroughput\tctrbench CPU during run (<= 1%)\tengine CPU during run\tleft behind\tverdict")
	for _, r := range rows {
		var missed []string
		if r.overlap < 90 {
			missed = append(missed, "overlap")
		}
		if r.selfShare > 1 {
			missed = append(missed, "harness CPU")
		}
		if r.left > 0 {
			missed = append(missed, "left behind")
		}
		verdict := "met"
		if len(missed) > 0 {
			verdict = "MISSED: " + strings.Join(missed, ", ")
		}
		fmt.Fprintf(w, "%d\t%d\t%.1f s\t%.1f s\t%.1f s\t%.1f%%\t%.2f Gbit/s\t%.2f%% of the machine\t%.2f%%\t%d\t%s\n",
			r.pairs, r.entities, r.setup.Seconds(), r.run.Seconds(), r.teardown.Seconds(), r.overlap, r.throughput, r.selfShare, r.engineShare, r.left, verdict)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Println("set-up: trial start to the first client's measured run (image, 2n containers created, started, ready); tear-down: the last client's end to every container removed. CPU: this process's user+system time (the orchestrator, as in `ctrbench run`) and dockerd's and containerd's, over the run, as a share of all CPUs.")
	return nil
}
