package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// holder is what the store says of the lock's holder.
const holder = "the results file /r/r.db is locked by another process (pid 4242 (sqlite3) holds its write lock)"

// lockingSink records trials as the store does, except while locked (from
// trial lockFrom on, until unlock): then each offer waits for the lock
// until its deadline (at most a short busy timeout) and fails as a
// *Locked.
type lockingSink struct {
	mu        sync.Mutex
	locked    bool
	lockFrom  int
	trials    []result.Trial
	offers    map[int]int // by seq
	cancelled bool        // an offer came with its context cancelled
}

func newLockingSink(lockFrom int) *lockingSink {
	return &lockingSink{locked: true, lockFrom: lockFrom, offers: map[int]int{}}
}

func (s *lockingSink) record(ctx context.Context, t result.Trial) error {
	s.mu.Lock()
	s.offers[t.Seq]++
	s.cancelled = s.cancelled || ctx.Err() != nil
	locked := s.locked && t.Seq >= s.lockFrom
	if !locked {
		s.trials = append(s.trials, t)
	}
	s.mu.Unlock()
	if !locked {
		return nil
	}
	wait := 20 * time.Millisecond
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	time.Sleep(wait)
	return &Locked{Err: errors.New(holder)}
}

func (s *lockingSink) unlock() {
	s.mu.Lock()
	s.locked = false
	s.mu.Unlock()
}

// seqs is the recorded trials' seqs, in the order recorded.
func (s *lockingSink) seqs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, t := range s.trials {
		out = append(out, t.Seq)
	}
	return out
}

// watched is a campaign's stderr that calls on once the first time a
// line with mark is written.
type watched struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	on   func()
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.on != nil && strings.Contains(w.buf.String(), w.mark) {
		go w.on()
		w.on = nil
	}
	return len(p), nil
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// shortLockWaits makes the waits for the lock fit a test.
func shortLockWaits(t *testing.T) {
	n, try, retry := lockNoteEvery, lockTry, lockRetry
	t.Cleanup(func() { lockNoteEvery, lockTry, lockRetry = n, try, retry })
	lockNoteEvery, lockTry, lockRetry = 30*time.Millisecond, 5*time.Millisecond, 20*time.Millisecond
}

const sixFakeTrials = "name: f\nrepetitions: 6\nwarmup: 0\nfactors: {platform: [fake]}\nworkloads: [{type: cpu.primes}]\n"

var okResult = `{"event":"result","result":{"status":"ok","observations":[{"metric":"x","value":1,"unit":"u","better":"higher"}]}}` + "\n"

// Issue 39, item 4: another process holds the results file locked from
// the first trial on. The campaign does not stop: the trials go on, each
// held in memory, and it says it waits, naming the holder, at once and
// then every lockNoteEvery. Once the lock is let go (here after the last
// trial ended), every trial is recorded, in order, each once.
func TestLockedFileWaitsAndLosesNothing(t *testing.T) {
	shortLockWaits(t)
	s := newLockingSink(1)
	stderr := &watched{mark: "[6/6]", on: func() { time.Sleep(150 * time.Millisecond); s.unlock() }}
	cfg := Config{Experiment: experiment(t, sixFakeTrials), CampaignID: "test-lock", Platforms: map[string]platform.Platform{"fake": &fake{stdout: okResult}},
		Sink: s.record, CleanupTimeout: 10 * time.Second, Progress: NewProgress(stderr, false)}
	cfg.Cells = cfg.Experiment.Cells()
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if sum.Ran != 6 || sum.OK != 6 || sum.Held != 0 || sum.Interrupted {
		t.Errorf("summary %+v", sum)
	}
	if got := s.seqs(); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("recorded %v, want 1 to 6 in order, each once", got)
	}
	if s.offers[1] < 2 {
		t.Errorf("trial 1 offered %d time(s): it was never offered again after the lock", s.offers[1])
	}
	out := stderr.String()
	t.Logf("stderr:\n%s", out)
	begin := strings.Index(out, "waiting: "+holder+"; the trials go on, each held in memory until it can be recorded, in order; the campaign stops (resumable) if the file is still locked after 10m0s")
	// The trials went on while it waited: trial 2 ended after the wait
	// began, and the wait ended after the last.
	second, last, over := strings.Index(out, "[2/6]"), strings.Index(out, "[6/6]"), strings.Index(out, "waiting: over after")
	if begin < 0 || second < begin || over < last || strings.Count(out, "the trials go on") != 1 {
		t.Errorf("want the wait said once, before trial 2 ended, its end after trial 6:\n%s", out)
	}
	if !strings.Contains(out, "(at most 10m0s): "+holder+"; 6 finished trial(s) held in memory") || !strings.Contains(out, "the 6 trial(s) held in memory are recorded") {
		t.Errorf("no note while it waited:\n%s", out)
	}
	if strings.Contains(out, "disk") {
		t.Errorf("a lock is not a full disk:\n%s", out)
	}
	if s.cancelled {
		t.Error("the sink was handed a cancelled context")
	}
}

// The lock outlasts the wait: the campaign stops as an interruption,
// saying which file and who holds it, the trials recorded before the lock
// kept, the held ones counted. Resumed once the lock is gone, it records
// the rest: every trial once, in order.
func TestLockHeldTooLongStopsResumably(t *testing.T) {
	shortLockWaits(t)
	s := newLockingSink(3)
	stderr := &watched{}
	e := experiment(t, sixFakeTrials)
	cfg := Config{Experiment: e, CampaignID: "test-lock", Cells: e.Cells(), Platforms: map[string]platform.Platform{"fake": &fake{stdout: okResult}},
		Sink: s.record, CleanupTimeout: 10 * time.Second, Progress: NewProgress(stderr, false), LockWait: 150 * time.Millisecond}
	start := time.Now()
	sum, err := Run(context.Background(), cfg)
	var stopped *LockStopped
	if !errors.As(err, &stopped) || !errors.Is(err, ErrInterrupted) || !sum.Interrupted {
		t.Fatalf("got %v, %+v", err, sum)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopping took %s, the wait being 150ms", d)
	}
	if sum.Ran != 2 || sum.Held < 1 || sum.Held != stopped.Held || sum.Ran+sum.Held > 6 || stopped.Waited < 150*time.Millisecond {
		t.Errorf("summary %+v, stopped %+v", sum, stopped)
	}
	msg := err.Error()
	if !strings.Contains(msg, holder+", and still was after") || !strings.Contains(msg, "held in memory could not be recorded") || strings.Contains(msg, "disk") {
		t.Errorf("message %q", msg)
	}
	if got := s.seqs(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("recorded before the stop: %v, want 1 and 2", got)
	}

	s.unlock()
	s.mu.Lock()
	cfg.Recorded = append([]result.Trial(nil), s.trials...)
	s.mu.Unlock()
	cfg.Platforms = map[string]platform.Platform{"fake": &fake{stdout: okResult}}
	sum, err = Run(context.Background(), cfg)
	if err != nil || sum.Ran != 4 || sum.Held != 0 {
		t.Fatalf("resumed: %v, %+v", err, sum)
	}
	if got := s.seqs(); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("after the resume: %v, want 1 to 6 in order, each once", got)
	}
}

// Ctrl-C while the campaign waits for the lock at its end: it stops at
// once, an interruption with the held trials counted, and not a
// *LockStopped; the sink never saw a cancelled context.
func TestInterruptWhileWaitingForTheLock(t *testing.T) {
	shortLockWaits(t)
	s := newLockingSink(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &watched{mark: "[6/6]", on: func() { time.Sleep(100 * time.Millisecond); cancel() }}
	e := experiment(t, sixFakeTrials)
	cfg := Config{Experiment: e, CampaignID: "test-lock", Cells: e.Cells(), Platforms: map[string]platform.Platform{"fake": &fake{stdout: okResult}},
		Sink: s.record, CleanupTimeout: 10 * time.Second, Progress: NewProgress(stderr, false)}
	start := time.Now()
	sum, err := Run(ctx, cfg)
	var stopped *LockStopped
	if !errors.Is(err, ErrInterrupted) || errors.As(err, &stopped) || !sum.Interrupted || sum.Held != 6 || sum.Ran != 0 {
		t.Fatalf("got %v, %+v", err, sum)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopping took %s", d)
	}
	if s.cancelled {
		t.Error("the sink was handed a cancelled context")
	}
}

// A sink that fails for another reason than a lock stops the campaign at
// that trial, a *RecordError, not a wait.
func TestRecordErrorIsNotAWait(t *testing.T) {
	s := &sink{err: errors.New("database or disk is full")}
	stderr := &watched{}
	cfg := options(experiment(t, sixFakeTrials), map[string]platform.Platform{"fake": &fake{stdout: okResult}}, s)
	cfg.Progress = NewProgress(stderr, false)
	sum, err := Run(context.Background(), cfg)
	var rec *RecordError
	if !errors.As(err, &rec) || rec.Seq != 1 || errors.Is(err, ErrInterrupted) || sum.Ran != 0 || sum.Held != 1 {
		t.Fatalf("got %v, %+v", err, sum)
	}
	if strings.Contains(stderr.String(), "waiting") {
		t.Errorf("it waited:\n%s", stderr)
	}
}
