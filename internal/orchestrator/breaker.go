package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// The circuit breaker. After a trial the platform failed, or one that
// timed out, each open platform with a service of its own
// (platform.Pinger) is pinged, every pingEvery, each ping bounded by
// pingTimeout; one that has not answered once within breakerWait stops
// the campaign: a frozen or dead engine would otherwise make every later
// trial time out one by one. The campaign stops as an interruption does
// (what it made removed as far as the platform lets, its trials kept),
// so `run --resume` completes it once the engine answers.
var (
	breakerWait = 30 * time.Second
	pingTimeout = 5 * time.Second
	pingEvery   = time.Second
	// breakerCleanup bounds the clean-up of a campaign the breaker
	// stopped.
	breakerCleanup = 10 * time.Second
)

// Stopped is the error of a campaign the orchestrator stopped itself
// because a platform stopped answering. It is an interruption
// (errors.Is(err, ErrInterrupted)): the campaign can be resumed.
type Stopped struct {
	Platform string
	Err      error // the last ping's
	Waited   time.Duration
}

func (s *Stopped) Error() string {
	return fmt.Sprintf("the %s platform's engine stopped answering (no answer for %s: %v)", s.Platform, s.Waited.Round(time.Second), s.Err)
}

func (s *Stopped) Is(target error) bool { return target == ErrInterrupted }

// suspect says whether a trial's end may mean a platform stopped
// answering.
func suspect(t result.Trial) bool {
	return t.Status == result.Timeout || t.FailedBy == result.FailedByPlatform
}

// breaker pings the campaign's platforms; it returns a *Stopped for the
// first that does not answer within breakerWait, nil when all answer or
// ctx ends.
func (c *running) breaker(ctx context.Context) error {
	names := make([]string, 0, len(c.env.Platforms))
	for n := range c.env.Platforms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, ok := c.env.Platforms[n].(platform.Pinger)
		if !ok {
			continue
		}
		if err := answers(ctx, p); err != nil && ctx.Err() == nil {
			return &Stopped{Platform: n, Err: err, Waited: breakerWait}
		}
	}
	return nil
}

// answers pings p until it answers once (nil) or breakerWait passes.
func answers(ctx context.Context, p platform.Pinger) error {
	deadline := time.Now().Add(breakerWait)
	for {
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := p.Ping(pctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("a ping got no answer within %s", pingTimeout)
		}
		if time.Now().Add(pingEvery).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pingEvery):
		}
	}
}
