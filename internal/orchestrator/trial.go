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

// trial runs one scheduled trial through its cell's runner, under the
// experiment's timeout, and returns its record; it never returns an error:
// what went wrong is the trial's status and reason.
func (c *campaign) trial(ctx context.Context, pc *plan.Cell, pt schedule.Trial) result.Trial {
	timeout := c.cfg.Experiment.Timeout
	t := result.Trial{CampaignID: c.cfg.CampaignID, CellID: pc.ID, Seq: pt.Seq, Repetition: pt.Repetition, Warmup: pt.Warmup, Started: time.Now().UTC()}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := c.cfg.Runner(pc).Run(tctx, &c.env, runner.Trial{Cell: pc, Seq: pt.Seq})
	t.Ended = time.Now().UTC()
	t.Seen = out.Seen
	switch {
	case err == nil:
		t.Status, t.Observations, t.Histograms, t.Flags = result.OK, out.Observations, out.Histograms, out.Flags
	case errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		t.Status = result.Timeout
		t.Error = fmt.Sprintf("timed out after %s (timeout in the experiment file): %v", timeout, err)
		t.Raw = out.Raw
	default:
		t.Status, t.Error, t.Raw = result.Failed, err.Error(), out.Raw
	}
	return t
}
