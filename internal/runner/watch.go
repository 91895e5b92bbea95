package runner

import (
	"bufio"
	"context"
	"fmt"
	"strings"
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
	// readyAt is when the ready event arrived: set before it is sent on
	// ready, so a receiver may read it.
	readyAt time.Time
}

func watch(name string, inst platform.Instance) *watched {
	r := &watched{name: name, inst: inst, ready: make(chan string, 1), result: make(chan *result.Result, 1), eof: make(chan struct{}), other: &strings.Builder{}}
	go func() {
		defer close(r.eof)
		sc := bufio.NewScanner(inst.Stdout())
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ev, ok := result.ParseEvent(sc.Bytes())
			switch {
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
	return fmt.Errorf("%s exited with code %d without a result: %s", r.name, ex.Code, lastLines(msg, 10))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// await returns the agent's result, or why there is none.
func (r *watched) await(ctx context.Context) (*result.Result, error) {
	select {
	case res := <-r.result:
		return res, nil
	case <-r.eof:
		select {
		case res := <-r.result:
			return res, nil
		default:
		}
		return nil, r.exitError(ctx)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", r.name, ctx.Err())
	}
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
