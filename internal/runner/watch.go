package runner

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// watched is a started agent whose stdout events arrive on channels.
type watched struct {
	name   string
	inst   platform.Instance
	ready  chan string
	result chan *result.Result
	eof    chan struct{}
	other  *strings.Builder // non-event stdout lines, for failure reports
	// forged is the first line that looked like an event and was not
	// signed with the agent's key; forgedC closes when it is set, so a
	// wait for an event that will never come ends at once.
	forged  atomic.Pointer[string]
	forgedC chan struct{}
	// readyAt is when the ready event arrived: set before it is sent on
	// ready, so a receiver may read it.
	readyAt time.Time
}

// watch reads the agent's output; only events signed with key count.
func watch(name string, inst platform.Instance, key string) *watched {
	r := &watched{name: name, inst: inst, ready: make(chan string, 1), result: make(chan *result.Result, 1), eof: make(chan struct{}), other: &strings.Builder{}, forgedC: make(chan struct{})}
	go func() {
		defer close(r.eof)
		sc := bufio.NewScanner(inst.Stdout())
		sc.Buffer(make([]byte, 64<<10), maxEventLine)
		for sc.Scan() {
			ev, verdict := result.ReadEvent(sc.Bytes(), key)
			ok := verdict == result.Valid
			switch {
			case verdict == result.Forged:
				line := clip(sc.Text(), 200)
				if r.forged.CompareAndSwap(nil, &line) {
					close(r.forgedC)
				}
			case ok && ev.Event == "ready":
				if r.readyAt.IsZero() {
					r.readyAt = time.Now()
				}
				select {
				case r.ready <- ev.Addr:
				default:
				}
			case ok && ev.Event == "result" && ev.Result != nil:
				select {
				case r.result <- ev.Result:
				default:
				}
			default:
				if r.other.Len() < 8<<10 {
					r.other.WriteString(sc.Text() + "\n")
				}
			}
		}
	}()
	return r
}

// maxEventLine bounds one line of an agent's output: a result with its
// telemetry and raw output is far below it. A longer line (a workload
// that found the agent's stdout and wrote 100 MB to it) ends the reading,
// and the trial fails without a result.
const maxEventLine = 16 << 20

func clip(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "?")
	}
	return strings.ToValidUTF8(s[:n], "?") + "…"
}

// forgery is the failure of a trial whose agent's output carried an
// event the agent did not sign.
func (r *watched) forgery() error {
	line := r.forged.Load()
	if line == nil {
		return nil
	}
	return fmt.Errorf("%s: a line on the agent's output looks like an event and was not signed with this trial's key, so a process in the instance wrote to the agent's output (the trial's numbers cannot be trusted): %q", r.name, *line)
}

func (r *watched) unforged(res *result.Result) (*result.Result, error) {
	if err := r.forgery(); err != nil {
		return nil, err
	}
	return res, nil
}

// exitError explains an agent that ended without a result.
func (r *watched) exitError(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ex, err := r.inst.Wait(wctx)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() == nil {
			// Not a slow exit: the platform could not say how its
			// instance ended (its engine stopped answering).
			return platformErr(fmt.Errorf("%s ended its output without a result, and the platform could not say why: %w", r.name, err))
		}
		return fmt.Errorf("%s ended its output without a result", r.name)
	}
	msg := strings.TrimSpace(ex.Stderr + "\n" + r.other.String())
	if ex.Vanished {
		return platformErr(fmt.Errorf("%s was removed by something else than ctrbench while it ran, before it printed a result: %s", r.name, lastLines(msg, 10)))
	}
	if ex.Code < 0 {
		return fmt.Errorf("%s was killed by a signal, or its platform's process was (no exit code), before it printed a result: %s", r.name, lastLines(msg, 10))
	}
	return fmt.Errorf("%s exited with code %d without a result: %s", r.name, ex.Code, lastLines(msg, 10))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// await returns the agent's result, or why there is none. A forged
// event seen before the result fails it.
func (r *watched) await(ctx context.Context) (*result.Result, error) {
	select {
	case res := <-r.result:
		if err := r.toldToStop(ctx, res); err != nil {
			return nil, err
		}
		return r.unforged(res)
	case <-r.eof:
		select {
		case res := <-r.result:
			return r.unforged(res)
		default:
		}
		if err := r.forgery(); err != nil {
			return nil, err
		}
		return nil, r.exitError(ctx)
	case <-r.forgedC:
		return nil, r.forgery()
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", r.name, ctx.Err())
	}
}

// toldToStop is the platform's failure of an agent whose result says it
// was interrupted (a SIGTERM it did not get from ctrbench) while its
// instance was removed by something else than ctrbench: a Kubernetes pod
// evicted, which ends gracefully and so prints a result. Nil otherwise.
func (r *watched) toldToStop(ctx context.Context, res *result.Result) error {
	if res == nil || res.Status == result.OK || !strings.HasPrefix(res.Error, result.Interrupted) {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ex, err := r.inst.Wait(wctx)
	if err != nil || !ex.Vanished {
		return nil
	}
	return platformErr(fmt.Errorf("%s was removed by something else than ctrbench while it ran (%s), and its agent, told to stop, printed: %s", r.name, strings.TrimSpace(ex.Stderr), clip(res.Error, 200)))
}

// awaitReady waits for a server's ready event.
func (r *watched) awaitReady(ctx context.Context) (string, error) {
	select {
	case addr := <-r.ready:
		return addr, nil
	case res := <-r.result:
		// An agent that is ready and done at once (a lifecycle entity):
		// select may pick either; the ready event came first.
		select {
		case addr := <-r.ready:
			r.result <- res // the buffer is empty again: keep it for await
			return addr, nil
		default:
		}
		return "", fmt.Errorf("%s ended before it was ready: %s", r.name, res.Error)
	case <-r.eof:
		select {
		case addr := <-r.ready:
			return addr, nil
		default:
		}
		return "", r.exitError(ctx)
	case <-r.forgedC:
		return "", r.forgery()
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for %s to be ready: %w", r.name, ctx.Err())
	}
}

// observations are an agent's result, or its failure.
func observations(res *result.Result) ([]result.Observation, string, error) {
	if res.Status != result.OK {
		return nil, res.Raw, fmt.Errorf("%s", res.Error)
	}
	return res.Observations, res.Raw, nil
}
