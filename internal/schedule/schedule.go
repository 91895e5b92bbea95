// Package schedule decides which trial of a campaign runs next. A Scheduler
// sees every trial as it is recorded — the ones stored before an
// interruption first, replayed on --resume, then each new one — and its
// decisions follow from those alone, so a resumed campaign continues as the
// interrupted one would have, whether the schedule was fixed up front (the
// seeded interleaved rounds) or is decided from the results as they come.
package schedule

import "github.com/ctrbench/ctrbench/internal/result"

// Trial is one slot of the run order.
type Trial struct {
	Seq        int // 1-based position
	CellID     int
	Repetition int // 1-based within the cell, counted separately for warm-ups
	Warmup     bool
}

// Scheduler chooses the next trial from the trials recorded so far.
type Scheduler interface {
	// Observe is told of a recorded trial, whatever its status: one stored
	// by an earlier run of the campaign, or one that just ended.
	Observe(t result.Trial)
	// Next returns the trial to run now; ok is false when the campaign is
	// complete.
	Next() (t Trial, ok bool)
	// Bound is the most trials the campaign will run, for progress.
	Bound() int
}

// Planner is a scheduler that fixes the whole order up front; a dry run
// prints it.
type Planner interface {
	Scheduler
	Plan() []Trial
}
