// Package runner runs one trial of a resolved cell: it starts the
// instances the plan names, speaks the agents' protocol, and turns what
// they report into the trial's observations. A TrialRunner is one shape of
// trial; today's is the chain (neighbours, servers, drivers, collect), and
// a lifecycle runner (creation times) is the next.
package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// Env is what a runner may use of the running campaign.
type Env struct {
	CampaignID string
	// Token makes instance names unique per invocation, so a resumed
	// campaign never collides with a leftover of the interrupted one.
	Token     string
	Platforms map[string]platform.Platform
	// Lab holds the networks ctrbench wires itself; nil when no cell needs
	// one.
	Lab *netlab.Lab
	// Labels go on every instance (the campaign's).
	Labels map[string]string
	// CleanupTimeout bounds removing what a trial made, which runs even
	// after its context ended.
	CleanupTimeout time.Duration
	// Starts bounds how many instances are being started at once (a
	// trial of many instances or pairs fans out); nil is no bound.
	Starts StartLimit
	// Abort, when done, is a platform that stopped answering: a trial's
	// removal stops waiting for it (what is left, `clean` and resume
	// remove). Nil: never.
	Abort context.Context
}

// StartLimit is a counting semaphore on instance starts.
type StartLimit chan struct{}

// NewStartLimit allows n starts at once (n < 1: no bound).
func NewStartLimit(n int) StartLimit {
	if n < 1 {
		return nil
	}
	return make(StartLimit, n)
}

// acquire waits for a start slot, or for ctx; release gives it back.
func (l StartLimit) acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l StartLimit) release() {
	if l != nil {
		<-l
	}
}

// Fanout is how many instances ctrbench starts at once: fanoutPerCPU per
// core, or CTRBENCH_FANOUT (0: no bound) where the machine wants another.
func Fanout() int {
	if n, err := strconv.Atoi(os.Getenv("CTRBENCH_FANOUT")); err == nil {
		return n
	}
	return fanoutPerCPU * runtime.NumCPU()
}

// fanoutPerCPU: see Fanout.
var fanoutPerCPU = 8

// labels are the campaign's labels plus those given.
func (e *Env) labels(kv ...string) map[string]string {
	l := maps.Clone(e.Labels)
	if l == nil {
		l = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// Trial is one trial to run.
type Trial struct {
	Cell *plan.Cell
	Seq  int // its place in the campaign: part of instance names and labels
	// Attempt counts the tries at this trial from 1 (0 reads as 1). A
	// retry's instances get names of their own: the engine may have made
	// an earlier attempt's container although the call that asked for it
	// timed out, and the name would then be taken ("Conflict").
	Attempt int
}

// tag is the trial's part of its instances' names: t<seq>, and a<n> for
// a retry.
func (t Trial) tag() string {
	if t.Attempt > 1 {
		return fmt.Sprintf("t%da%d", t.Seq, t.Attempt)
	}
	return fmt.Sprintf("t%d", t.Seq)
}

// Outcome is what a trial produced besides its status.
type Outcome struct {
	Observations []result.Observation
	// Histograms are the distributions the percentiles were read from.
	Histograms []result.Histogram
	// Raw is a tool's output when the trial failed, for the record, and an
	// ok user's workload's (exec, a service's client): the output its
	// numbers were read from, its tail.
	Raw string
	// Flags say why an ok trial's conditions were not as planned.
	Flags string
	// Seen is what the agents observed of their environment; a server's
	// keys are prefixed with its role.
	Seen map[string]string
	// Removal says what of the trial's instances could not be removed
	// (its measurement is whole): "" when all were.
	Removal string
}

// SeenRemoval is the key of a trial's record that says its removal did
// not finish (Outcome.Removal).
const SeenRemoval = "removal"

// see merges what an agent saw into the outcome.
func (o *Outcome) see(prefix string, m map[string]string) {
	if o.Seen == nil {
		o.Seen = map[string]string{}
	}
	for k, v := range m {
		o.Seen[prefix+k] = v
	}
}

// TrialRunner runs one shape of trial. It returns an error for a trial
// that failed, with what the outcome holds so far (a tool's raw output).
type TrialRunner interface {
	Run(ctx context.Context, env *Env, t Trial) (Outcome, error)
}

// For chooses the runner for a cell: the lifecycle runner for a workload
// that times its entities' lives, else the chain.
func For(c *plan.Cell) TrialRunner {
	if c.Workload != nil && c.Workload.Trial.Lifecycle {
		return Lifecycle{}
	}
	return Chain{}
}

// PlatformError is a trial's failure that the platform caused, not the
// workload: an instance that could not be started or wired, an engine that
// stopped answering. The orchestrator tries such a trial again.
type PlatformError struct{ Err error }

func (e *PlatformError) Error() string { return e.Err.Error() }
func (e *PlatformError) Unwrap() error { return e.Err }

// platformErr marks err as the platform's (nil stays nil).
func platformErr(err error) error {
	if err == nil {
		return nil
	}
	return &PlatformError{Err: err}
}
