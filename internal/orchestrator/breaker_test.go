package orchestrator

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
)

// pingingFake is the fake with an engine that answers pings or not.
type pingingFake struct {
	*fake
	silent atomic.Bool
	pings  atomic.Int32
}

func (p *pingingFake) Ping(ctx context.Context) error {
	p.pings.Add(1)
	if p.silent.Load() {
		<-ctx.Done() // a frozen engine: the call hangs
		return ctx.Err()
	}
	return nil
}

// An engine that stops answering (frozen) stops the campaign after the
// first trial the platform failed, within the breaker's bounded wait, as
// an interruption the campaign can resume from, saying which platform;
// one that answers lets the campaign go on past a platform failure.
func TestBreakerStopsACampaignWhoseEngineIsSilent(t *testing.T) {
	retryPause = 0
	w, pt, pe := breakerWait, pingTimeout, pingEvery
	t.Cleanup(func() { breakerWait, pingTimeout, pingEvery = w, pt, pe })
	breakerWait, pingTimeout, pingEvery = 300*time.Millisecond, 50*time.Millisecond, 20*time.Millisecond
	ok := `{"event":"result","result":{"status":"ok"}}` + "\n"
	src := "retries: 0\nname: f\nrepetitions: 3\nfactors: {platform: [fake]}\nworkloads: [{type: cpu.primes}]\n"

	p := &pingingFake{fake: &fake{startErr: errors.New("context deadline exceeded"), stdout: ok}}
	p.silent.Store(true)
	s := &sink{}
	start := time.Now()
	sum, err := Run(context.Background(), options(experiment(t, src), map[string]platform.Platform{"fake": p}, s))
	var stopped *Stopped
	if !errors.As(err, &stopped) || !errors.Is(err, ErrInterrupted) || !sum.Interrupted {
		t.Fatalf("got %v, %+v", err, sum)
	}
	if !strings.Contains(err.Error(), "the fake platform's engine stopped answering") {
		t.Errorf("message %q", err)
	}
	if len(s.trials) != 1 || s.trials[0].FailedBy != result.FailedByPlatform {
		t.Errorf("want the one failed trial recorded before the stop: %+v", s.trials)
	}
	// Promptness, not a timing: the breaker's wait is 300 ms here and
	// 30 s by default; a frozen engine without it would hold for ever.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopping took %s (breaker wait %s)", d, breakerWait)
	}
	if n := p.pings.Load(); n < 2 {
		t.Errorf("%d pings: the breaker gave up at the first", n)
	}

	// The engine answers: a platform failure is a failed trial, and the
	// campaign goes on.
	p = &pingingFake{fake: &fake{startErr: errors.New("context deadline exceeded"), failStarts: 1, stdout: ok}}
	s = &sink{}
	if _, err := Run(context.Background(), options(experiment(t, src), map[string]platform.Platform{"fake": p}, s)); err != nil {
		t.Fatal(err)
	}
	if len(s.trials) != 3 || p.pings.Load() != 1 {
		t.Errorf("%d trials, %d pings: want 3 trials and one ping after the failed one", len(s.trials), p.pings.Load())
	}
}

// runnerFunc is a TrialRunner from a function.
type runnerFunc func(ctx context.Context, env *runner.Env, t runner.Trial) (runner.Outcome, error)

func (f runnerFunc) Run(ctx context.Context, env *runner.Env, t runner.Trial) (runner.Outcome, error) {
	return f(ctx, env, t)
}

// A frozen engine stops the campaign whatever the phase the trial is in,
// and whatever its timeout (an hour here): a measurement whose output
// stopped coming is cut short and not recorded (a resumed campaign runs
// it again); a trial whose measurement ended and whose removal hangs is
// recorded with what it measured, its removal noted; an engine that
// answers lets a trial longer than the watchdog's start run to its end.
func TestWatchdogStopsATrialInAnyPhase(t *testing.T) {
	saved := []time.Duration{watchAfter, watchEvery, breakerWait, pingTimeout}
	t.Cleanup(func() { watchAfter, watchEvery, breakerWait, pingTimeout = saved[0], saved[1], saved[2], saved[3] })
	watchAfter, watchEvery, breakerWait, pingTimeout = 50*time.Millisecond, 20*time.Millisecond, 300*time.Millisecond, 50*time.Millisecond
	src := "retries: 2\nname: f\nrepetitions: 2\ntimeout: 1h\nfactors: {platform: [fake]}\nworkloads: [{type: cpu.primes}]\n"
	measured := []result.Observation{{Metric: "events_per_sec", Value: 1000, Unit: "events/s", Better: result.Higher}}
	for name, c := range map[string]struct {
		silent bool
		run    runnerFunc
		want   int // trials recorded
		stop   bool
	}{
		"measuring": {silent: true, run: func(ctx context.Context, _ *runner.Env, _ runner.Trial) (runner.Outcome, error) {
			<-ctx.Done() // its output no longer comes
			return runner.Outcome{}, ctx.Err()
		}, want: 0, stop: true},
		"removing": {silent: true, run: func(ctx context.Context, env *runner.Env, _ runner.Trial) (runner.Outcome, error) {
			<-env.Abort.Done() // measured; its removal hangs until the campaign aborts
			return runner.Outcome{Observations: measured, Removal: "did not finish", Seen: map[string]string{runner.SeenRemoval: "did not finish"}}, nil
		}, want: 1, stop: true},
		"answering": {silent: false, run: func(ctx context.Context, _ *runner.Env, _ runner.Trial) (runner.Outcome, error) {
			time.Sleep(400 * time.Millisecond) // longer than the watchdog's start and the breaker's wait
			return runner.Outcome{Observations: measured}, nil
		}, want: 2},
	} {
		t.Run(name, func(t *testing.T) {
			p := &pingingFake{fake: &fake{}}
			p.silent.Store(c.silent)
			s := &sink{}
			cfg := options(experiment(t, src), map[string]platform.Platform{"fake": p}, s)
			cfg.Runner = func(*plan.Cell) runner.TrialRunner { return c.run }
			start := time.Now()
			sum, err := Run(context.Background(), cfg)
			var stopped *Stopped
			if c.stop != (errors.As(err, &stopped) && errors.Is(err, ErrInterrupted) && sum.Interrupted) {
				t.Fatalf("stopped %v: got %v, %+v", c.stop, err, sum)
			}
			if len(s.trials) != c.want {
				t.Fatalf("%d trials recorded, want %d: %+v", len(s.trials), c.want, s.trials)
			}
			if name == "removing" && (s.trials[0].Status != result.OK || s.trials[0].Seen[runner.SeenRemoval] == "" || len(s.trials[0].Observations) != 1) {
				t.Errorf("the measured trial: %+v", s.trials[0])
			}
			// Promptness, not a timing: the watchdog's bounds are tens of
			// milliseconds here; without it the trial holds for its hour.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}
