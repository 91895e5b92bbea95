// Package campaign runs an experiment as a recorded campaign: it creates
// the campaign and its cells in the results database (or finds an
// interrupted one to resume), runs it through the orchestrator with every
// trial committed as it ends, and records how it ended. The CLI's run
// command is this one call.
package campaign

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/cleanup"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Campaign statuses (result's, where readers find them).
const (
	StatusRunning     = result.CampaignRunning
	StatusDone        = result.CampaignDone
	StatusInterrupted = result.CampaignInterrupted
	StatusFailed      = result.CampaignFailed
)

// Status is a campaign's status as a reader should see it: a campaign
// recorded as running whose ctrbench is gone (killed) was interrupted.
func Status(c result.Campaign) string {
	if c.Status == StatusRunning && c.Owner != "" && !sysinfo.OwnerAlive(c.Owner) {
		return StatusInterrupted
	}
	return c.Status
}

// Options say what to run.
type Options struct {
	// Experiment is the validated file to run; nil with Resume.
	Experiment *spec.Experiment
	// Resume is the ID (or a unique prefix) of an interrupted campaign to
	// finish: same cells, seed and order, only the trials not recorded.
	Resume string
	// Machine is what validation knows of this machine (a resumed
	// experiment is validated again).
	Machine spec.Machine
	// Binary is the ctrbench executable the agents run.
	Binary string
	// Engine is the swarm manager cluster platforms drive (--docker-host).
	Engine platform.Engine
	// Stderr gets progress and notes; TTY says it is a terminal.
	Stderr io.Writer
	TTY    bool
	// For a campaign that is not the experiment's own design (a
	// calibration): its cells, kind and baseline.
	Cells    []result.Cell
	Kind     string
	Baseline map[string]string
	// LockWait bounds the wait for another process to let go of the
	// results file's lock (the trials go on meanwhile, held in memory);
	// default orchestrator.DefaultLockWait.
	LockWait time.Duration
}

// Outcome is how a run went.
type Outcome struct {
	Campaign result.Campaign
	Summary  orchestrator.Summary
}

// ErrInterrupted is returned (wrapped) when the run was stopped (Ctrl-C)
// before the campaign finished; what it made was removed.
var ErrInterrupted = orchestrator.ErrInterrupted

// Run runs a new campaign of o.Experiment, or resumes o.Resume, recording
// into db.
func Run(ctx context.Context, db *store.DB, o Options) (Outcome, error) {
	var (
		out      Outcome
		e        = o.Experiment
		recorded []result.Trial
		err      error
	)
	if o.Resume != "" {
		if out.Campaign, e, recorded, err = resume(ctx, db, &o); err != nil {
			return out, err
		}
	}
	cells := o.Cells
	if cells == nil {
		cells = e.Cells()
	}
	if o.Resume == "" {
		if out.Campaign, err = create(ctx, db, o, e, cells); err != nil {
			return out, err
		}
	}
	id := out.Campaign.ID
	// Facts learned once the platforms are ready; kept to be written at
	// the end if the results file is locked when they come.
	var env map[string]string
	sum, runErr := orchestrator.Run(ctx, orchestrator.Config{
		Experiment: e,
		CampaignID: id,
		Cells:      cells,
		Binary:     o.Binary,
		Engine:     o.Engine,
		Recorded:   recorded,
		// The orchestrator hands over a finished trial even after Ctrl-C,
		// with a deadline on the wait for another process's lock when it
		// holds trials already.
		Sink:     trialSink(db),
		LockWait: o.LockWait,
		Prepared: envRecorder(ctx, db, id, o.Stderr, &env),
		Progress: orchestrator.NewProgress(o.Stderr, o.TTY),
	})
	out.Summary = sum
	out.Campaign.Status = finish(ctx, db, id, env, runErr, o.Stderr)
	return out, runErr
}

// trialSink records each finished trial into db, saying when another
// process holds the results file locked so that the orchestrator holds
// the trial and offers it again.
func trialSink(db *store.DB) orchestrator.Sink {
	return func(ctx context.Context, t result.Trial) error {
		_, err := db.RecordTrial(ctx, t)
		var locked *store.LockedError
		if errors.As(err, &locked) {
			return &orchestrator.Locked{Err: locked}
		}
		return err
	}
}

// envRecorder records the facts the platforms give once ready as campaign
// id's environment; while the results file is locked it keeps them in
// *held instead, for finish to write.
func envRecorder(ctx context.Context, db *store.DB, id string, stderr io.Writer, held *map[string]string) func(info map[string]string) {
	return func(info map[string]string) {
		err := db.SetCampaignEnv(context.WithoutCancel(ctx), id, info)
		var locked *store.LockedError
		switch {
		case errors.As(err, &locked):
			*held = info
		case err != nil:
			fmt.Fprintf(stderr, "ctrbench: recording platform info: %v\n", err)
		}
	}
}

// finish writes the end of campaign id — the environment held while the
// results file was locked, then its status and end time — and returns the
// status, which says how the run that ended with runErr went.
func finish(ctx context.Context, db *store.DB, id string, env map[string]string, runErr error, stderr io.Writer) string {
	// The end is written after Ctrl-C too; after a campaign that stopped
	// because the file stayed locked, with one short wait for the lock.
	endCtx := context.WithoutCancel(ctx)
	var locked *orchestrator.LockStopped
	if errors.As(runErr, &locked) {
		var cancel context.CancelFunc
		endCtx, cancel = context.WithTimeout(endCtx, time.Second)
		defer cancel()
	}
	if env != nil {
		if err := db.SetCampaignEnv(endCtx, id, env); err != nil {
			fmt.Fprintf(stderr, "ctrbench: recording platform info: %v\n", err)
		}
	}
	status := StatusDone
	switch {
	case errors.Is(runErr, orchestrator.ErrInterrupted):
		status = StatusInterrupted
	case runErr != nil:
		status = StatusFailed
	}
	if err := db.FinishCampaign(endCtx, id, status, time.Now().UTC()); err != nil {
		fmt.Fprintf(stderr, "ctrbench: recording campaign end: %v\n", err)
	}
	return status
}

// resume finds campaign o.Resume, refuses it while its owner runs,
// reloads its file and its trials and cells (into o.Cells), and removes
// what the interrupted run left behind.
func resume(ctx context.Context, db *store.DB, o *Options) (c result.Campaign, e *spec.Experiment, recorded []result.Trial, err error) {
	if c, err = db.Campaign(ctx, o.Resume); err != nil {
		return c, nil, nil, fmt.Errorf("finding campaign to resume: %w", err)
	}
	if c.Status == StatusRunning && sysinfo.OwnerAlive(c.Owner) {
		pid, _, _ := strings.Cut(c.Owner, " ")
		return c, nil, nil, fmt.Errorf("campaign %s is still running (ctrbench pid %s): wait for it, or stop it first", c.ID, pid)
	}
	if e, err = spec.Reload(c.SpecPath, c.SpecText, c.Seed, o.Machine); err != nil {
		return c, nil, nil, err
	}
	if recorded, err = db.Trials(ctx, c.ID); err != nil {
		return c, nil, nil, err
	}
	// The cells it ran, as stored: a calibration's are not the file's.
	if o.Cells, err = db.Cells(ctx, c.ID); err != nil {
		return c, nil, nil, err
	}
	fmt.Fprintf(o.Stderr, "resuming campaign %s (%s)\n", c.ID, c.SpecPath)
	// A run killed with -9 left its containers, networks and lab
	// behind; with the same names they would stand in the way.
	rep, err := cleanup.Run(ctx, cleanup.Options{Campaign: c.ID})
	for _, r := range rep.Removed {
		fmt.Fprintf(o.Stderr, "resume: removed %s, left by the interrupted run\n", r)
	}
	if err != nil {
		return c, nil, nil, fmt.Errorf("removing what the interrupted run left behind: %w", err)
	}
	if err := db.ResumeCampaign(ctx, c.ID, sysinfo.Owner()); err != nil {
		return c, nil, nil, err
	}
	// The machine as it is now: the campaign's fingerprint is its start's.
	warnMachine(o.Stderr, sysinfo.Fingerprint(nil))
	return c, e, recorded, nil
}

// create records a new campaign of e with its cells and says what it
// will run.
func create(ctx context.Context, db *store.DB, o Options, e *spec.Experiment, cells []result.Cell) (result.Campaign, error) {
	baseline := e.Baseline
	if o.Baseline != nil {
		baseline = o.Baseline
	}
	c := result.Campaign{
		ID: newID(e.Name), Name: e.Name, SpecPath: e.Path, SpecText: e.Text, Seed: e.Seed,
		Started: time.Now().UTC(), Status: StatusRunning, Env: sysinfo.Fingerprint(toolNames(cells)), Baseline: baseline,
		Owner: sysinfo.Owner(), Kind: o.Kind, Adaptive: e.Adaptive,
	}
	if err := db.CreateCampaign(ctx, c); err != nil {
		return c, err
	}
	if err := db.AddCells(ctx, c.ID, cells); err != nil {
		return c, err
	}
	seedNote := ""
	if !e.SeedGiven {
		seedNote = " (drawn; pass --set seed=N to repeat this order)"
	}
	trials := strconv.Itoa(len(cells) * (e.Repetitions + e.Warmup))
	if a := e.Adaptive; a != nil {
		trials = fmt.Sprintf("%d to %d", len(cells)*(a.Min+e.Warmup), len(cells)*(a.Max+e.Warmup))
	}
	fmt.Fprintf(o.Stderr, "campaign %s: %d cells, %s trials, seed %d%s, results in %s\n",
		c.ID, len(cells), trials, e.Seed, seedNote, db.Path())
	if files := e.HostFiles(); len(files) > 0 {
		fmt.Fprintf(o.Stderr, "files of this machine it reads (never writes): %s\n", strings.Join(files, "; "))
	}
	warnMachine(o.Stderr, c.Env)
	return c, nil
}

// warnMachine says, before the first trial, what of the machine's tuning
// or load is known to add noise (sysinfo.Hygiene), a line each.
func warnMachine(w io.Writer, env map[string]string) {
	for _, x := range sysinfo.Hygiene(env) {
		fmt.Fprintf(w, "warning: machine: %s\n", x)
	}
}

// toolNames lists the external tools the cells' workloads run, for the
// environment fingerprint.
func toolNames(cells []result.Cell) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cells {
		ws, _ := workload.Lookup(c.WorkloadType)
		for _, t := range ws.ToolsFor(c.Params) {
			if !seen[t.Binary] {
				seen[t.Binary] = true
				out = append(out, t.Binary)
			}
		}
	}
	return out
}

var nonID = regexp.MustCompile(`[^a-z0-9]+`)

// newID is name-date-time-random: readable, sortable, unique, and valid
// in Docker object names.
func newID(name string) string {
	n := strings.Trim(nonID.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > 24 {
		n = n[:24]
	}
	if n == "" {
		n = "campaign"
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%s-%s", n, time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(b))
}
