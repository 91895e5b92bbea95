// Package neighbour runs neighbours: workloads that loop beside a measured
// target for as long as it runs (S0 looped its neighbours for 90 minutes
// because run times differ). It records when each neighbour was busy, so the
// overlap with the target's measured window is a number, not an assumption.
package neighbour

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/telemetry"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Idle is the neighbour that does nothing: the A/A check of the instrument.
const Idle = "idle"

// Spec is one neighbour: a workload type and its resolved parameters.
type Spec struct {
	Type   string
	Params workload.Values
	// End, when set, is the one role of a client/server workload this
	// neighbour loops, its other end in another instance (S0's netperf
	// neighbour across the bridge); unset, every role runs here, chained
	// over loopback.
	End *End
}

// End is one end of a client/server neighbour: its role and, for the
// server, where it listens (one port, the same every iteration), for the
// client the server's host:port.
type End struct {
	Role   string
	Bind   string
	Port   int
	Target string
}

// Parse reads "TYPE=JSON" as given on the agent's command line.
func Parse(s string) (typ, params string) {
	typ, params, _ = strings.Cut(s, "=")
	return typ, params
}

// Window and Report are the shared record types.
type (
	Window = result.Window
	Report = result.NeighbourReport
)

// Running neighbours; Stop ends them and returns their reports.
type Running struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	reports []*Report
}

// Start launches every neighbour in its own loop and returns once each has
// begun its first iteration, so the target never starts alone. Disk
// workloads get a fresh directory inside dataDir for every iteration ("" =
// the system's temporary directory).
func Start(ctx context.Context, specs []Spec, dataDir string, logf func(string, ...any)) (*Running, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &Running{cancel: cancel}
	starts := make([]chan struct{}, len(specs))
	for i, s := range specs {
		rep := &Report{Type: s.Type}
		r.reports = append(r.reports, rep)
		starts[i] = make(chan struct{})
		var o sync.Once
		ch := starts[i]
		began := func() { o.Do(func() { close(ch) }) }
		r.wg.Add(1)
		go func(s Spec) {
			defer r.wg.Done()
			defer began()
			loop(ctx, s, rep, began, dataDir, logf)
		}(s)
	}
	for _, ch := range starts {
		select {
		case <-ch:
		case <-ctx.Done():
			cancel()
			return nil, ctx.Err()
		}
	}
	return r, nil
}

// Stop ends every neighbour and returns what each did.
func (r *Running) Stop() []Report {
	r.cancel()
	r.wg.Wait()
	out := make([]Report, len(r.reports))
	for i, rep := range r.reports {
		out[i] = *rep
	}
	return out
}

// loop runs one neighbour until ctx ends. started is called as the first
// iteration begins.
func loop(ctx context.Context, s Spec, rep *Report, started func(), dataDir string, logf func(string, ...any)) {
	if s.Type == Idle {
		t0 := time.Now()
		started()
		<-ctx.Done()
		rep.Iterations = 1
		rep.Windows = append(rep.Windows, Window{Start: t0, End: time.Now()})
		return
	}
	spec, ok := workload.Lookup(s.Type)
	if !ok {
		rep.Failures++
		rep.LastError = fmt.Sprintf("unknown workload type %q", s.Type)
		return
	}
	for ctx.Err() == nil {
		t0 := time.Now()
		if s.End == nil || spec.RoleList()[0] != s.End.Role {
			started() // a server has begun once it listens (once)
		}
		err := once(ctx, spec, s, dataDir, logf, started)
		rep.Windows = append(rep.Windows, Window{Start: t0, End: time.Now()})
		switch {
		case ctx.Err() != nil:
			// Cut short by Stop: the time it ran still overlapped.
			rep.Iterations++
		case err != nil:
			rep.Failures++
			rep.LastError = err.Error()
			// A neighbour that fails at once must not spin.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		default:
			rep.Iterations++
		}
	}
}

// refusedFor is how long a client end tries again while its server does
// not listen, before its iteration fails.
const refusedFor = 5 * time.Second

// once runs a workload a single time. A multi-role neighbour runs all its
// roles here, chained over loopback: the load lands on this instance's
// CPUs and network stack.
func once(ctx context.Context, spec *workload.Spec, s Spec, dataDir string, logf func(string, ...any), listening func()) error {
	p := s.Params
	data, err := os.MkdirTemp(dataDir, "ctrbench-neighbour-")
	if err != nil {
		return fmt.Errorf("making a data directory: %w", err)
	}
	defer os.RemoveAll(data)
	roles := spec.RoleList()
	env := func(role string) workload.Env {
		return workload.Env{Role: role, Bind: "127.0.0.1", Log: logf, Ready: func(string) {}, DataDir: data}
	}
	if e := s.End; e != nil {
		run, ok := spec.Run[e.Role]
		if !ok {
			return fmt.Errorf("%s has no role %q (roles: %s)", spec.Type, e.Role, strings.Join(roles, ", "))
		}
		env := env(e.Role)
		env.Bind, env.Port, env.Target = e.Bind, e.Port, e.Target
		env.Ready = func(string) { listening() }
		// A client between two of its server's iterations finds no one
		// listening for a moment (refused), or is reset as the server
		// closes the listener its connection was queued on: it tries
		// again at once, in the same iteration, rather than leave a gap
		// in the load.
		for end := time.Now().Add(refusedFor); ; time.Sleep(2 * time.Millisecond) {
			_, _, err := run(ctx, p, env)
			between := errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
			if e.Target == "" || !between || ctx.Err() != nil || time.Now().After(end) {
				return err
			}
		}
	}
	if len(roles) == 1 {
		_, _, err := spec.Run[roles[0]](ctx, p, env(roles[0]))
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	target := ""
	errs := make(chan error, len(roles))
	for _, role := range roles[:len(roles)-1] {
		e := env(role)
		e.Target = target
		ready := make(chan string, 1)
		e.Ready = func(a string) { ready <- a }
		wg.Add(1)
		go func(role string, e workload.Env) {
			defer wg.Done()
			if _, _, err := spec.Run[role](ctx, p, e); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", role, err)
			}
		}(role, e)
		select {
		case target = <-ready:
		case err := <-errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New(role + " not ready within 30 s")
		}
	}
	e := env(roles[len(roles)-1])
	e.Target = target
	_, _, err = spec.Run[roles[len(roles)-1]](ctx, p, e)
	return err
}

// Overlap is the fraction (0..1) of [start, end] covered by the windows.
func Overlap(start, end time.Time, windows []Window) float64 {
	total := end.Sub(start)
	if total <= 0 {
		return 0
	}
	ws := append([]Window(nil), windows...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start.Before(ws[j].Start) })
	var covered time.Duration
	cur := start
	for _, w := range ws {
		s, e := w.Start, w.End
		if s.Before(cur) {
			s = cur
		}
		if e.After(end) {
			e = end
		}
		if e.After(s) {
			covered += e.Sub(s)
			cur = e
		}
	}
	return float64(covered) / float64(total)
}

// WindowTelemetry is what a neighbour's counters did over [start, end]:
// from the last reading at or before start to the first at or after end
// (readings are a quarter second apart, so the span is at most that much
// wider than the window). nil without readings.
func WindowTelemetry(samples []result.TelemetrySample, start, end time.Time) map[string]float64 {
	if len(samples) == 0 {
		return nil
	}
	from, to := samples[0], samples[len(samples)-1]
	for _, s := range samples {
		if !s.At.After(start) {
			from = s
		}
	}
	for i := len(samples) - 1; i >= 0; i-- {
		if !samples[i].At.Before(end) {
			to = samples[i]
		}
	}
	return telemetry.Diff(from.Values, to.Values)
}

// FlagKey is where Attach records, in the result's Seen, that the
// neighbours did not cover the window; the trial is stored with that flag.
const FlagKey = "neighbour.flag"

// MinOverlap is the share of the target's window every neighbour must have
// covered; below it the trial is flagged.
const MinOverlap = 0.95

// Attach adds what res.Neighbours did to the target's result: overlap with
// the measured window [start, end] (the least of them) and iterations. A
// neighbour that never completed an iteration loaded nothing: the trial
// fails rather than pass as an interference measurement.
func Attach(res *result.Result, start, end time.Time) error {
	minOverlap, iters := 1.0, 0
	for _, n := range res.Neighbours {
		if n.Iterations == 0 && n.Failures > 0 {
			return fmt.Errorf("neighbour %s never ran: %s", n.Type, n.LastError)
		}
		minOverlap = min(minOverlap, Overlap(start, end, n.Windows))
		iters += n.Iterations
	}
	for i, n := range res.Neighbours {
		for _, m := range telemetry.Metrics {
			if v, ok := WindowTelemetry(n.Telemetry, start, end)[m.Name]; ok {
				res.Observations = append(res.Observations, result.Observation{Metric: m.Name, Scope: result.ScopeNeighbour, Index: i + 1, Kind: result.KindTelemetry, Value: v, Unit: m.Unit, Better: result.Lower})
			}
		}
	}
	res.Observations = append(res.Observations,
		result.Observation{Metric: "overlap_pct", Scope: result.ScopeNeighbour, Value: 100 * minOverlap, Unit: "%", Better: result.Higher},
		result.Observation{Metric: "iterations", Scope: result.ScopeNeighbour, Value: float64(iters), Unit: "count", Better: result.Higher})
	if minOverlap < MinOverlap {
		if res.Seen == nil {
			res.Seen = map[string]string{}
		}
		res.Seen[FlagKey] = fmt.Sprintf("neighbours covered only %.0f%% of the measured window (want %.0f%%)", 100*minOverlap, 100*MinOverlap)
	}
	return nil
}
