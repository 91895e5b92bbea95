package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// A results file another process holds locked (a sqlite3 shell left in a
// transaction, a backup) does not stop a campaign at once. The trials go
// on; each finished trial is held in memory and offered to the Sink again,
// in order, between trials, until the lock is let go: then every held
// trial is recorded, each in a transaction of its own, none twice. The
// wait says so on stderr when it begins and every lockNoteEvery. A lock
// held for longer than Config.LockWait stops the campaign as an
// interruption does (*LockStopped): the trials recorded stay, the held
// ones are run again by `run --resume`.

// DefaultLockWait is how long a campaign waits, unless Config.LockWait
// says otherwise, for another process to let go of the results file's
// lock: long enough for a backup, short enough that a forgotten shell
// does not hold a campaign for ever.
const DefaultLockWait = 10 * time.Minute

var (
	// lockNoteEvery is how often a wait for the lock is reported.
	lockNoteEvery = 30 * time.Second
	// lockTry bounds an attempt to record held trials between two
	// trials: the next trial is not held up for the lock.
	lockTry = 100 * time.Millisecond
	// lockRetry bounds each attempt once no trial is left to run, the
	// attempts following one another until the lock is let go.
	lockRetry = time.Second
)

// Locked is the error of a Sink that found the results file locked by
// another process and could not record the trial: nothing of it was
// written, and the same trial can be offered again. Err says which file
// and, where the system tells, which process holds it.
type Locked struct{ Err error }

func (e *Locked) Error() string { return e.Err.Error() }
func (e *Locked) Unwrap() error { return e.Err }

// LockStopped is the error of a campaign that stopped because the results
// file stayed locked by another process for Config.LockWait. It is an
// interruption (errors.Is(err, ErrInterrupted)): the trials recorded
// before the lock stay; the Held ones, finished but never recorded, are
// run again when the campaign is resumed.
type LockStopped struct {
	Waited time.Duration
	Held   int
	Err    error // the last attempt's, a *Locked
}

func (s *LockStopped) Error() string {
	return fmt.Sprintf("%v, and still was after %s of waiting; %d finished trial(s) held in memory could not be recorded",
		s.Err, s.Waited.Round(time.Second), s.Held)
}

func (s *LockStopped) Is(target error) bool { return target == ErrInterrupted }
func (s *LockStopped) Unwrap() error        { return s.Err }

// recorder hands finished trials to the Sink in the order they ended,
// holding them while the results file is locked.
type recorder struct {
	sink     Sink
	wait     time.Duration
	progress *Progress
	recorded func(result.Trial) // a trial is in the file

	mu    sync.Mutex // the notes' goroutine reads what follows
	held  []result.Trial
	last  error     // the last attempt's *Locked
	since time.Time // when the wait began; zero when not waiting
	freed int       // trials recorded since it began
	quit  chan struct{}
	done  chan struct{}
}

func newRecorder(cfg Config, recorded func(result.Trial)) *recorder {
	wait := cfg.LockWait
	if wait <= 0 {
		wait = DefaultLockWait
	}
	return &recorder{sink: cfg.Sink, wait: wait, progress: cfg.Progress, recorded: recorded}
}

// add records t after the trials held before it. Its first attempt waits
// as long as the Sink does by itself (the store's busy timeout, enough
// for another campaign's transaction); while trials are held already, it
// waits lockTry. It returns a *RecordError for a trial the Sink could not
// record for any other reason than a lock, a *LockStopped once the lock
// has been held for longer than the wait allows, nil otherwise (t
// recorded, or held).
func (r *recorder) add(ctx context.Context, t result.Trial) error {
	r.mu.Lock()
	r.held = append(r.held, t)
	try := time.Duration(0)
	if len(r.held) > 1 {
		try = lockTry
	}
	r.mu.Unlock()
	return r.flush(ctx, try)
}

// drain waits for the held trials to be recorded once no trial is left to
// run: attempts of lockRetry one after another, until they are recorded
// (nil), the lock has been held too long (*LockStopped), the Sink fails
// otherwise (*RecordError), or ctx ends (nil, the trials still held).
func (r *recorder) drain(ctx context.Context) error {
	for {
		began := time.Now()
		if err := r.flush(ctx, lockRetry); err != nil || r.pending() == 0 {
			return err
		}
		// A Sink that did not wait out its deadline is not asked again
		// at once.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(lockRetry - time.Since(began)):
		}
	}
}

// pending is how many finished trials are held, not recorded.
func (r *recorder) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

// flush offers the held trials to the Sink, first first, each attempt
// waiting for the lock at most try (0: as long as the Sink does), until
// all are recorded or one finds the file locked.
func (r *recorder) flush(ctx context.Context, try time.Duration) error {
	for {
		r.mu.Lock()
		if len(r.held) == 0 {
			r.mu.Unlock()
			return nil
		}
		t := r.held[0]
		r.mu.Unlock()
		err := r.offer(ctx, t, try)
		var locked *Locked
		switch {
		case err == nil:
			r.mu.Lock()
			r.held = r.held[1:]
			r.freed++
			over := len(r.held) == 0 && !r.since.IsZero()
			r.mu.Unlock()
			r.recorded(t)
			if over {
				r.endWait()
			}
		case errors.As(err, &locked):
			if waited := r.beginWait(locked); waited >= r.wait {
				return &LockStopped{Waited: waited, Held: r.pending(), Err: locked}
			}
			return nil
		default:
			return &RecordError{Seq: t.Seq, Err: err}
		}
	}
}

// offer hands t to the Sink. A finished trial is written even after
// Ctrl-C, so ctx's cancellation does not reach the Sink; try, when set,
// is the deadline of its wait for the lock.
func (r *recorder) offer(ctx context.Context, t result.Trial, try time.Duration) error {
	sctx := context.WithoutCancel(ctx)
	if try > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(sctx, try)
		defer cancel()
	}
	return r.sink(sctx, t)
}

// beginWait notes an attempt that found the file locked and returns how
// long the wait has lasted; the first says the wait began and starts the
// notes.
func (r *recorder) beginWait(locked *Locked) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = locked
	if !r.since.IsZero() {
		return time.Since(r.since)
	}
	r.since, r.freed = time.Now(), 0
	r.quit, r.done = make(chan struct{}), make(chan struct{})
	r.progress.Note("waiting: %v; the trials go on, each held in memory until it can be recorded, in order; the campaign stops (resumable) if the file is still locked after %s",
		locked, r.wait)
	go r.notes(r.quit, r.done)
	return 0
}

// notes says every lockNoteEvery that the wait goes on, until quit.
func (r *recorder) notes(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(lockNoteEvery)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
			r.mu.Lock()
			waited, last, held := time.Since(r.since), r.last, len(r.held)
			r.mu.Unlock()
			r.progress.Note("waiting for %s (at most %s): %v; %d finished trial(s) held in memory",
				waited.Round(time.Second), r.wait, last, held)
		}
	}
}

// endWait says the wait is over, every held trial recorded.
func (r *recorder) endWait() {
	r.mu.Lock()
	waited, freed := time.Since(r.since), r.freed
	r.since = time.Time{}
	r.mu.Unlock()
	r.stopNotes()
	r.progress.Note("waiting: over after %s: the results file is free again, and the %d trial(s) held in memory are recorded, in order", waited.Round(time.Second), freed)
}

// stopNotes ends the notes' goroutine, if one runs.
func (r *recorder) stopNotes() {
	r.mu.Lock()
	quit, done := r.quit, r.done
	r.quit, r.done = nil, nil
	r.mu.Unlock()
	if quit != nil {
		close(quit)
		<-done
	}
}
