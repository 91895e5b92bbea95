package orchestrator

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
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
