package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
	"github.com/ctrbench/ctrbench/internal/schedule"
)

// retryPause is how long a platform gets to recover (an engine
// restarting) before a trial it failed is tried again.
var retryPause = 2 * time.Second

// trial runs one scheduled trial through its cell's runner, under the
// experiment's timeout, and returns its record; it never returns an error:
// what went wrong is the trial's status and reason. A trial the platform
// failed is tried again, up to the experiment's retries, each earlier
// attempt kept in the record; a workload's failure is final.
func (c *running) trial(ctx context.Context, pc *plan.Cell, pt schedule.Trial) result.Trial {
	var attempts []result.Attempt
	for {
		t, platformFailed := c.attempt(ctx, pc, pt, len(attempts)+1)
		t.Attempts = attempts
		if !platformFailed || len(attempts) >= c.cfg.Experiment.Retries || ctx.Err() != nil || c.aborted() != nil {
			return t
		}
		attempts = append(attempts, result.Attempt{Started: t.Started, Ended: t.Ended, Status: t.Status, Error: t.Error, FailedBy: t.FailedBy})
		select {
		case <-ctx.Done():
			return t
		case <-time.After(retryPause):
		}
	}
}

// attempt runs the trial once; platformFailed says the platform, not the
// workload, failed it.
func (c *running) attempt(ctx context.Context, pc *plan.Cell, pt schedule.Trial, n int) (t result.Trial, platformFailed bool) {
	timeout := c.cfg.Experiment.Timeout
	t = result.Trial{CampaignID: c.cfg.CampaignID, CellID: pc.ID, Seq: pt.Seq, Repetition: pt.Repetition, Warmup: pt.Warmup, Started: time.Now().UTC()}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wctx, wcancel := context.WithCancelCause(tctx)
	defer wcancel(nil)
	if err := c.setMachine(pc); err != nil {
		t.Ended, t.Status, t.Error, t.FailedBy = time.Now().UTC(), result.Failed, err.Error(), result.FailedByPlatform
		return t, true
	}
	w := c.watch(wcancel, c.pingers())
	out, err := c.cfg.Runner(pc).Run(wctx, &c.env, runner.Trial{Cell: pc, Seq: pt.Seq, Attempt: n})
	if s := w.stop(); s != nil && err != nil {
		// Cut short by the watchdog: not a result; the campaign stops
		// and a resumed one runs it again (aborted says so).
		err = s
	}
	t.Ended = time.Now().UTC()
	t.Seen = out.Seen
	var pe *runner.PlatformError
	platformFailed = errors.As(err, &pe)
	switch {
	case err == nil:
		t.Status, t.Observations, t.Flags, t.Histograms, t.Raw = result.OK, out.Observations, out.Flags, out.Histograms, out.Raw
		return t, false
	case errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		t.Status = result.Timeout
		t.Error = fmt.Sprintf("timed out after %s (timeout in the experiment file): %v", timeout, err)
	default:
		t.Status, t.Error = result.Failed, err.Error()
	}
	t.Raw, t.FailedBy = out.Raw, result.FailedByWorkload
	if platformFailed {
		t.FailedBy = result.FailedByPlatform
	}
	return t, platformFailed
}

// setMachine gives the emulated machine the cell's quota (machine.cpus)
// before its trial, when cells vary it; its instances, all below the
// machine's cgroup, share that quota.
func (c *running) setMachine(pc *plan.Cell) error {
	if c.machineGroup == nil || !c.cfg.Experiment.VariesMachine() {
		return nil
	}
	if err := c.machineGroup.SetCPUs(pc.MachineCPUs); err != nil {
		return fmt.Errorf("setting the emulated machine's quota to %g cores: %w", pc.MachineCPUs, err)
	}
	return nil
}
