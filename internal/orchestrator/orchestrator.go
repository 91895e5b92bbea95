// Package orchestrator runs a campaign: it resolves the cells (plan),
// prepares what they need — the emulated machine's cgroup, the network lab,
// the platforms, opened from their drivers — and runs the trials in the
// order a Scheduler chooses, each under a timeout through its TrialRunner,
// handing every finished trial to a Sink the moment it ends (or, while
// another process holds the results file locked, as soon as it lets go:
// record.go). A failed or hung workload is a failed trial with its
// reason; the campaign goes on.
package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
	"github.com/ctrbench/ctrbench/internal/schedule"
	"github.com/ctrbench/ctrbench/internal/spec"
)

// Sink receives each trial the moment it ends (the store commits it).
// ctx is never cancelled (a finished trial is written even after
// Ctrl-C); its deadline, when it has one, bounds how long the Sink waits
// for another process's lock on the results file. A Sink that finds the
// file locked returns a *Locked, and is offered the same trial again.
type Sink func(ctx context.Context, t result.Trial) error

// Config says what campaign to run and where its trials go.
type Config struct {
	Experiment *spec.Experiment
	CampaignID string
	Cells      []result.Cell // as expanded by Experiment.Cells()
	// Binary is the static ctrbench executable the agents run (and the
	// WireGuard helper); default: this process's own.
	Binary string
	// Engine is an existing engine cluster platforms drive (--docker-host).
	Engine platform.Engine
	// Platforms are platforms already made, by name (tests); the others
	// the cells use are opened from their drivers and closed at the end.
	Platforms map[string]platform.Platform
	// Scheduler chooses the order; default: the seeded interleaved rounds.
	Scheduler schedule.Scheduler
	// Recorded are the trials an earlier run of this campaign stored:
	// the scheduler replays them and they are not run again.
	Recorded []result.Trial
	// Runner chooses each cell's trial runner; default: runner.For.
	Runner func(*plan.Cell) runner.TrialRunner
	Sink   Sink
	// LockWait bounds the wait for another process to let go of the
	// results file's lock, the trials going on meanwhile; default
	// DefaultLockWait.
	LockWait time.Duration
	// Prepared is called once platforms are ready, with their descriptions.
	Prepared func(info map[string]string)
	Progress *Progress
	// CleanupTimeout bounds removal of what a trial or campaign created,
	// which runs even after ctx is cancelled; default 60 s.
	CleanupTimeout time.Duration
}

// Summary counts what a run did.
type Summary struct {
	// Ran, OK and Failed count the trials recorded.
	Planned, Ran, OK, Failed int
	// Held counts the trials that finished but were never recorded:
	// the results file stayed locked by another process until the
	// campaign stopped. A resumed campaign runs them again.
	Held        int
	Interrupted bool
	// CleanupErrors say what the end of the campaign could not remove
	// (an engine that stopped answering): `ctrbench clean` removes it.
	CleanupErrors []string
}

// RecordError is a trial the results database could not record for
// another reason than a lock (its disk is full): the campaign stops
// there, the trials recorded before are kept, and a resumed campaign
// runs this one again.
type RecordError struct {
	Seq int
	Err error
}

func (e *RecordError) Error() string { return fmt.Sprintf("recording trial %d: %v", e.Seq, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// ErrInterrupted is returned when ctx ended before the campaign finished.
var ErrInterrupted = errors.New("interrupted")

// Run executes the campaign.
func Run(ctx context.Context, cfg Config) (sum Summary, err error) {
	c, err := newRunning(cfg)
	if err != nil {
		return Summary{}, err
	}
	sum = Summary{Planned: c.sched.Bound()}
	defer func() { sum.CleanupErrors = c.close(ctx) }()
	if err := c.prepare(ctx); err != nil {
		sum.Interrupted = errors.Is(err, ErrInterrupted)
		return sum, err
	}
	for _, t := range cfg.Recorded {
		c.sched.Observe(t)
	}
	cfg.Progress.Begin(sum.Planned, sum.Planned-len(cfg.Recorded))
	rec := newRecorder(cfg, func(t result.Trial) {
		sum.Ran++
		if t.Status == result.OK {
			sum.OK++
		} else {
			sum.Failed++
		}
	})
	defer rec.stopNotes()
	// stop ends the campaign early with err, after a last quick attempt
	// to record what is held unless recording is what failed.
	stop := func(err error) (Summary, error) {
		cfg.Progress.Finish()
		var (
			rerr   *RecordError
			locked *LockStopped
		)
		if !errors.As(err, &rerr) && !errors.As(err, &locked) {
			_ = rec.flush(ctx, lockTry)
		}
		sum.Held = rec.pending()
		sum.Interrupted = sum.Interrupted || errors.Is(err, ErrInterrupted)
		return sum, err
	}
	if err := c.runTrials(ctx, rec, &sum); err != nil {
		return stop(err)
	}
	cfg.Progress.Finish()
	// Trials still held wait for the lock here, as long as it is allowed
	// and Ctrl-C does not end the wait.
	if err := rec.drain(ctx); err != nil {
		return stop(err)
	}
	if sum.Held = rec.pending(); sum.Held > 0 {
		sum.Interrupted = true
	}
	if sum.Interrupted {
		return sum, ErrInterrupted
	}
	return sum, nil
}

// runTrials runs the trials in the order the scheduler chooses, each
// recorded (or held while the results file is locked) the moment it ends,
// until the schedule is done or ctx ends (sum says it was interrupted).
// It returns the error that ends the campaign early — a trial it could not
// record, an engine found silent — for Run to stop with.
func (c *running) runTrials(ctx context.Context, rec *recorder, sum *Summary) error {
	for {
		pt, ok := c.sched.Next()
		if !ok {
			return nil
		}
		if ctx.Err() != nil {
			sum.Interrupted = true
			return nil
		}
		pc := c.cells[pt.CellID]
		if err := c.mendLab(ctx); err != nil {
			return err
		}
		c.cfg.Progress.Start(pt, pc.Cell)
		t := c.trial(ctx, pc, pt)
		if s := c.aborted(); s != nil {
			// The watchdog found an engine silent mid-trial: the trial is
			// recorded when its measurement had ended (only its removal
			// hung), else left for a resumed campaign to run again.
			if t.Status == result.OK {
				if err := rec.add(ctx, t); err != nil {
					return err
				}
				c.sched.Observe(t)
				c.cfg.Progress.End(pt, pc.Cell, t)
			}
			c.cfg.CleanupTimeout = min(c.cfg.CleanupTimeout, breakerCleanup)
			sum.Interrupted = true
			return s
		}
		if ctx.Err() != nil {
			// The trial was cut short by Ctrl-C, not by its workload: it is
			// not a result, and a resumed campaign runs it again.
			sum.Interrupted = true
			return nil
		}
		// Recorded now, or held while the results file is locked: the
		// schedule goes on either way.
		if err := rec.add(ctx, t); err != nil {
			return err
		}
		c.sched.Observe(t)
		c.cfg.Progress.End(pt, pc.Cell, t)
		if suspect(t) {
			if err := c.breaker(ctx); err != nil {
				// The engine is known not to answer: the clean-up's calls
				// to it get a short wait, and clean or resume removes
				// what they could not.
				c.cfg.CleanupTimeout = min(c.cfg.CleanupTimeout, breakerCleanup)
				sum.Interrupted = true
				return err
			}
		}
	}
}

// running is a campaign while it runs: its resolved cells and what was
// made for them.
type running struct {
	cfg   Config
	cells map[int]*plan.Cell
	needs plan.Needs
	sched schedule.Scheduler
	env   runner.Env
	// machine is the emulated machine's cgroup, "" for none; undo removes
	// what prepare made, last first.
	machine      string
	machineGroup *cgroup.Group
	undo         []func(context.Context) error
	// abort trips the campaign's runner.Env.Abort: a platform stopped
	// answering mid-trial (the watchdog).
	abort context.CancelCauseFunc
}

// aborted is why the watchdog stopped the campaign, nil when it did not.
func (c *running) aborted() *Stopped {
	if c.env.Abort == nil || c.env.Abort.Err() == nil {
		return nil
	}
	var s *Stopped
	if errors.As(context.Cause(c.env.Abort), &s) {
		return s
	}
	return nil
}

func newRunning(cfg Config) (*running, error) {
	if cfg.CleanupTimeout == 0 {
		cfg.CleanupTimeout = 60 * time.Second
	}
	if cfg.Runner == nil {
		cfg.Runner = runner.For
	}
	cells, err := plan.ResolveAll(cfg.Experiment, cfg.Cells)
	if err != nil {
		return nil, err
	}
	c := &running{cfg: cfg, cells: map[int]*plan.Cell{}, needs: plan.Collect(cells), sched: cfg.Scheduler}
	for _, pc := range cells {
		c.cells[pc.ID] = pc
	}
	if c.sched == nil {
		c.sched = plan.Schedule(cfg.Experiment, cfg.Cells)
	}
	tok := make([]byte, 2)
	_, _ = rand.Read(tok)
	c.env = runner.Env{
		CampaignID:     cfg.CampaignID,
		Token:          hex.EncodeToString(tok),
		Platforms:      map[string]platform.Platform{},
		Labels:         labels(cfg.CampaignID),
		CleanupTimeout: cfg.CleanupTimeout,
		Starts:         runner.NewStartLimit(runner.Fanout()),
	}
	c.env.Abort, c.abort = context.WithCancelCause(context.Background())
	return c, nil
}

// close undoes what prepare did, last first, even after ctx ended, and
// says what it could not.
func (c *running) close(ctx context.Context) []string {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.CleanupTimeout)
	defer cancel()
	var failed []string
	for i := len(c.undo) - 1; i >= 0; i-- {
		if err := c.undo[i](cctx); err != nil {
			fmt.Fprintf(os.Stderr, "ctrbench: %v\n", err)
			failed = append(failed, err.Error())
		}
	}
	return failed
}
