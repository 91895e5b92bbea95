package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// serverGrace is how long a server may take to finish after its client.
const serverGrace = 15 * time.Second

// trial runs one planned trial and returns its record; it never returns an
// error: what went wrong is the trial's status and reason.
func (o *Options) trial(ctx context.Context, cell result.Cell, pt spec.PlannedTrial) result.Trial {
	t := result.Trial{CampaignID: o.CampaignID, CellID: cell.ID, Seq: pt.Seq, Repetition: pt.Repetition, Warmup: pt.Warmup, Started: time.Now().UTC()}
	tctx, cancel := context.WithTimeout(ctx, o.Experiment.Timeout)
	defer cancel()
	var ex extras
	obs, raw, err := o.executeChain(tctx, cell, pt, &ex)
	t.Ended = time.Now().UTC()
	t.Seen = ex.seen
	switch {
	case err == nil:
		t.Status, t.Observations, t.Flags = result.OK, obs, ex.flags
	case errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		t.Status = result.Timeout
		t.Error = fmt.Sprintf("timed out after %s (timeout in the experiment file): %v", o.Experiment.Timeout, err)
		t.Raw = raw
	default:
		t.Status, t.Error, t.Raw = result.Failed, err.Error(), raw
	}
	return t
}

// running is an agent being watched: its stdout events arrive on channels.
type running struct {
	name   string
	inst   platform.Instance
	ready  chan string
	result chan *result.Result
	eof    chan struct{}
	other  *strings.Builder // non-event stdout lines, for failure reports
}

func watch(name string, inst platform.Instance) *running {
	r := &running{name: name, inst: inst, ready: make(chan string, 1), result: make(chan *result.Result, 1), eof: make(chan struct{}), other: &strings.Builder{}}
	go func() {
		defer close(r.eof)
		sc := bufio.NewScanner(inst.Stdout())
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ev, ok := result.ParseEvent(sc.Bytes())
			switch {
			case ok && ev.Event == "ready":
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
func (r *running) exitError(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ex, err := r.inst.Wait(wctx)
	if err != nil {
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
func (r *running) await(ctx context.Context) (*result.Result, error) {
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
func (r *running) awaitReady(ctx context.Context) (string, error) {
	select {
	case addr := <-r.ready:
		return addr, nil
	case res := <-r.result:
		return "", fmt.Errorf("%s ended before it was ready: %s", r.name, res.Error)
	case <-r.eof:
		return "", r.exitError(ctx)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for %s to be ready: %w", r.name, ctx.Err())
	}
}

// extras is what a trial records beside its observations.
type extras struct {
	flags string            // see result.Trial.Flags
	seen  map[string]string // see result.Trial.Seen
}

// see merges what an agent saw into the trial's record.
func (x *extras) see(prefix string, m map[string]string) {
	if x.seen == nil {
		x.seen = map[string]string{}
	}
	for k, v := range m {
		x.seen[prefix+k] = v
	}
}

// neighbours lists the cell's antagonists as the agent takes them:
// "TYPE=PARAMS_JSON" with the parameters of that workload in the file, or
// "idle".
func (o *Options) neighbours(cell result.Cell) []string {
	level := cell.Factors[spec.FAntagonist]
	if level == spec.AntagonistIdle {
		return []string{neighbour.Idle}
	}
	var out []string
	for _, name := range spec.Antagonists(level) {
		w, ok := o.Experiment.Workload(name)
		if !ok {
			continue
		}
		p, _ := json.Marshal(w.Params)
		out = append(out, w.Type+"="+string(p))
	}
	return out
}

// stopNeighbours ends antagonists that ran in their own instances and adds
// what they did to the target's result.
func stopNeighbours(ctx context.Context, loops []*running, target *result.Result) error {
	sctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	for _, r := range loops {
		if err := r.inst.Stop(sctx); err != nil {
			return fmt.Errorf("stopping an antagonist: %w", err)
		}
	}
	for _, r := range loops {
		res, err := r.await(sctx)
		if err != nil {
			return fmt.Errorf("antagonist: %w", err)
		}
		if res.Status != result.OK {
			return fmt.Errorf("antagonist %s: %s", res.Workload, res.Error)
		}
		target.Neighbours = append(target.Neighbours, res.Neighbours...)
	}
	return neighbour.Attach(target, target.Started, target.Ended)
}

func fromResult(res *result.Result) ([]result.Observation, string, error) {
	if res.Status != result.OK {
		return nil, res.Raw, fmt.Errorf("%s", res.Error)
	}
	return res.Observations, "", nil
}

func limitsOf(pl spec.Placement) (platform.Limits, error) {
	var l platform.Limits
	if pl.CPUs != spec.NoLimit && pl.CPUs != "" {
		f, err := strconv.ParseFloat(pl.CPUs, 64)
		if err != nil {
			return l, fmt.Errorf("cpus %q: %w", pl.CPUs, err)
		}
		l.CPUs = f
	}
	if pl.Cpuset != spec.NoLimit {
		l.Cpuset = pl.Cpuset
	}
	if pl.BlkioWeight != spec.NoLimit && pl.BlkioWeight != "" {
		w, err := strconv.Atoi(pl.BlkioWeight)
		if err != nil {
			return l, fmt.Errorf("blkio_weight %q: %w", pl.BlkioWeight, err)
		}
		l.BlkioWeight = uint16(w)
	}
	for _, bps := range []struct {
		level string
		to    *int64
	}{{pl.ReadBps, &l.ReadBps}, {pl.WriteBps, &l.WriteBps}} {
		if bps.level != spec.NoLimit && bps.level != "" {
			n, err := workload.ParseSize(bps.level)
			if err != nil {
				return l, fmt.Errorf("block I/O rate %q: %w", bps.level, err)
			}
			*bps.to = n
		}
	}
	if pl.Memory != spec.NoLimit && pl.Memory != "" {
		n, err := workload.ParseSize(pl.Memory)
		if err != nil {
			return l, fmt.Errorf("memory %q: %w", pl.Memory, err)
		}
		l.MemoryBytes = n
	}
	return l, nil
}
