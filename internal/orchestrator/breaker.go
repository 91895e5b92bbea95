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

func (s *Stopped) Is(target error) bool {
	return target == ErrInterrupted || target == platform.ErrUnresponsive
}

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

// The watchdog. A trial's calls to a platform's service can hang in any
// phase — starting an instance, a measurement whose output no longer
// comes (a frozen engine relays nothing), collecting, removing — and a
// trial's own timeout may be many minutes. So from watchAfter into every
// trial on, each open platform with a service is pinged every watchEvery
// (a ping is one small request: microseconds of the engine's time); one
// that has not answered for breakerWait stops the campaign as an
// interruption, whatever the phase: the trial's context is cancelled, its
// removal stops waiting (runner.Env.Abort), a trial whose measurement had
// ended is recorded with it and its removal noted, and the campaign
// closes with the breaker's short clean-up. From a freeze to the stop:
// at most watchAfter + breakerWait + a ping's timeout, then the clean-up
// (the chaos cases time it).
var (
	watchAfter = 15 * time.Second
	watchEvery = 5 * time.Second
)

// watchdog guards one trial (see above).
type watchdog struct {
	stopped chan *Stopped // holds the trip, once
	done    chan struct{}
	quit    chan struct{}
}

// watch starts the watchdog of a trial (or of a platform's preparation)
// whose context cancel cancels, pinging pingers; abort is the campaign's.
func (c *running) watch(cancel context.CancelCauseFunc, pingers map[string]platform.Pinger) *watchdog {
	w := &watchdog{stopped: make(chan *Stopped, 1), done: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(w.done)
		if len(pingers) == 0 {
			return
		}
		select {
		case <-w.quit:
			return
		case <-time.After(watchAfter):
		}
		last := map[string]time.Time{}
		for n := range pingers {
			last[n] = time.Now()
		}
		for {
			for n, p := range pingers {
				pctx, pcancel := context.WithTimeout(context.Background(), pingTimeout)
				err := p.Ping(pctx)
				pcancel()
				if err == nil {
					last[n] = time.Now()
					continue
				}
				if silent := time.Since(last[n]); silent >= breakerWait {
					if errors.Is(err, context.DeadlineExceeded) {
						err = fmt.Errorf("a ping got no answer within %s", pingTimeout)
					}
					s := &Stopped{Platform: n, Err: err, Waited: silent}
					w.stopped <- s
					c.abort(s)
					cancel(s)
					return
				}
			}
			select {
			case <-w.quit:
				return
			case <-time.After(watchEvery):
			}
		}
	}()
	return w
}

// stop ends the watchdog; it returns its trip, nil when it did not trip.
func (w *watchdog) stop() *Stopped {
	close(w.quit)
	<-w.done
	select {
	case s := <-w.stopped:
		return s
	default:
		return nil
	}
}

// pingers are the open platforms with a service to ping, by name.
func (c *running) pingers() map[string]platform.Pinger {
	out := map[string]platform.Pinger{}
	for n, p := range c.env.Platforms {
		if pp, ok := p.(platform.Pinger); ok {
			out[n] = pp
		}
	}
	return out
}
