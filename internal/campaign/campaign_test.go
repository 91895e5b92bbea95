package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/orchestrator"
	_ "github.com/ctrbench/ctrbench/internal/platform/native"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/testutil"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

// lockAt is a campaign's stderr that takes the results file's lock
// (sqlite3) once trial 2 has ended, and releases it after hold (never,
// for 0: the test does).
type lockAt struct {
	t    *testing.T
	db   string
	hold time.Duration

	mu      sync.Mutex
	buf     bytes.Buffer
	pid     int
	release func()
}

func (w *lockAt) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.release == nil && regexp.MustCompile(`\[2/\d+\]`).Match(w.buf.Bytes()) {
		// The trial's line is written after it was recorded: the lock
		// comes between trials 2 and 3.
		w.pid, w.release = testutil.SQLite3Lock(w.t, w.db)
		if w.hold > 0 {
			time.AfterFunc(w.hold, w.release)
		}
	}
	return len(p), nil
}

func (w *lockAt) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// quickCampaign is reps short trials as host processes; it skips a test
// on a machine without sqlite3 to hold the lock with.
func quickCampaign(t *testing.T, reps int) *spec.Experiment {
	t.Helper()
	e, err := spec.Parse("lock.yaml", []byte(fmt.Sprintf(`name: lock
seed: 1
repetitions: %d
warmup: 0
timeout: 30s
factors:
  platform: [native]
workloads:
  - {name: p, type: cpu.primes, params: {duration: 100ms, max_prime: "2000"}}
`, reps)), nil, spec.Machine{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// seqsOf reads back the campaign's trials: their seqs, in order, and
// whether any cell's repetition is there twice.
func seqsOf(t *testing.T, db *store.DB, id string) (seqs []int, dup bool) {
	t.Helper()
	trials, err := db.Trials(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int]bool{}
	for _, tr := range trials {
		seqs = append(seqs, tr.Seq)
		k := [2]int{tr.CellID, tr.Repetition}
		dup = dup || seen[k]
		seen[k] = true
	}
	return seqs, dup
}

func inOrder(seqs []int, n int) bool {
	if len(seqs) != n {
		return false
	}
	for i, s := range seqs {
		if s != i+1 {
			return false
		}
	}
	return true
}

// Issue 39, item 4, with the real pieces: a sqlite3 shell holds the
// results file's write lock for 8 s (longer than the store's own 5 s
// busy timeout) from trial 2 on. The campaign waits, says so naming the
// shell's pid, keeps running trials, and records every one once the
// shell commits: all 8, in order, none twice, finished as done.
func TestLockedResultsFileWaitsAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes and holds a lock for 8 s")
	}
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stderr := &lockAt{t: t, db: path, hold: 8 * time.Second}
	out, err := Run(context.Background(), db, Options{Experiment: quickCampaign(t, 8), Binary: testutil.Binary(t), Stderr: stderr})
	log := stderr.String()
	t.Logf("stderr:\n%s", log)
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Summary; s.Ran != 8 || s.OK != 8 || s.Held != 0 || out.Campaign.Status != StatusDone {
		t.Errorf("summary %+v, status %s", s, out.Campaign.Status)
	}
	seqs, dup := seqsOf(t, db, out.Campaign.ID)
	if !inOrder(seqs, 8) || dup {
		t.Errorf("recorded %v (a repetition twice: %v), want 1 to 8 in order", seqs, dup)
	}
	holder := fmt.Sprintf("waiting: the results file %s is locked by another process (pid %d (sqlite3) holds its write lock); the trials go on", path, stderr.pid)
	if !strings.Contains(log, holder) || !strings.Contains(log, "waiting: over after") {
		t.Errorf("stderr does not say it waits for pid %d (sqlite3), then that the wait is over", stderr.pid)
	}
	if strings.Contains(log, "disk") {
		t.Error("a lock is not a full disk")
	}
	if err := db.Check(context.Background()); err != nil {
		t.Error(err)
	}
}

// The lock outlasts a short wait (1 s): the campaign stops as an
// interruption, its error naming the file and the sqlite3 shell; the two
// trials recorded before the lock are kept, the held ones are not
// recorded twice or out of order. (Resuming such a campaign is the
// orchestrator's test, TestLockHeldTooLongStopsResumably, and the chaos
// case's.)
func TestLockedResultsFileStopsAfterTheWait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes and waits for locks")
	}
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stderr := &lockAt{t: t, db: path}
	out, err := Run(context.Background(), db, Options{Experiment: quickCampaign(t, 6), Binary: testutil.Binary(t), Stderr: stderr, LockWait: time.Second})
	stderr.mu.Lock()
	release := stderr.release
	stderr.mu.Unlock()
	if release == nil {
		t.Fatalf("the lock was never taken: %v\n%s", err, stderr)
	}
	release()
	t.Logf("stderr:\n%s", stderr)
	var (
		stopped *orchestrator.LockStopped
		locked  *store.LockedError
	)
	if !errors.Is(err, ErrInterrupted) || !errors.As(err, &stopped) || !errors.As(err, &locked) {
		t.Fatalf("got %v, want an interruption for the lock", err)
	}
	if want := fmt.Sprintf("pid %d (sqlite3) holds its write lock", stderr.pid); locked.Holder != want || locked.Path != path {
		t.Errorf("holder %q of %s, want %q of %s", locked.Holder, locked.Path, want, path)
	}
	if s := out.Summary; s.Ran != 2 || s.Held < 1 || s.Ran+s.Held > 6 || !s.Interrupted || out.Campaign.Status != StatusInterrupted {
		t.Errorf("summary %+v, status %s", s, out.Campaign.Status)
	}
	seqs, dup := seqsOf(t, db, out.Campaign.ID)
	if !inOrder(seqs, 2) || dup {
		t.Errorf("recorded %v, want 1 and 2", seqs)
	}
}
