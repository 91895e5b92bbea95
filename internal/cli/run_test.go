package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/campaign"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
)

// What run says when the results file stopped a campaign: a lock that
// outlasted the wait names the lock and its holder, and how to go on, and
// never disk space; another error that is not a full disk says to fix
// what it names. (A full disk's message, with its "free space on the
// disk", is e2e's TestChaosResultsDiskFull, on a real full disk.)
func TestRunMessagesForTheResultsFile(t *testing.T) {
	out := campaign.Outcome{Campaign: result.Campaign{ID: "c-1"},
		Summary: orchestrator.Summary{Planned: 30, Ran: 12, Held: 3, Interrupted: true}}
	locked := &orchestrator.LockStopped{Waited: 10*time.Minute + 2*time.Second, Held: 3, Err: &orchestrator.Locked{
		Err: &store.LockedError{Path: "/r/r.db", Holder: "pid 4242 (sqlite3) holds its write lock", Err: errors.New("database is locked (5) (SQLITE_BUSY)")}}}
	err := interruptedOr(locked, out, "/r/r.db")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitError {
		t.Fatalf("a lock that outlasted the wait: %v, want exit %d", err, ExitError)
	}
	want := "the results file /r/r.db stayed locked by another process for 10m2s (pid 4242 (sqlite3) holds its write lock), so the campaign stopped after 12 of 30 trials, every one recorded " +
		"(3 more finished while the results file was locked by another process and were not recorded: resume runs them again); everything it created was removed; " +
		"end that process's transaction (or the process), then: ctrbench run --db /r/r.db --resume c-1"
	if err.Error() != want {
		t.Errorf("a lock that outlasted the wait:\n got %s\nwant %s", err, want)
	}

	// Ctrl-C while trials were held: the interruption says they were not
	// recorded.
	out.Summary.Held = 2
	err = interruptedOr(campaign.ErrInterrupted, out, "/r/r.db")
	if !strings.HasPrefix(err.Error(), "interrupted after 12 of 30 trials (2 more finished while the results file was locked") {
		t.Errorf("interrupted while trials were held: %v", err)
	}

	rec := &orchestrator.RecordError{Seq: 13, Err: errors.New("recording trial 13: committing: disk I/O error (10)")}
	msg := interruptedOr(rec, out, "/r/r.db").Error()
	if !strings.Contains(msg, "could not record trial 13 (committing: disk I/O error (10)), so the campaign stopped") ||
		!strings.Contains(msg, "; fix what the error names, then: ctrbench run --db /r/r.db --resume c-1") || strings.Contains(msg, "free space") {
		t.Errorf("another error of the results file: %s", msg)
	}
}

// --lock-wait takes a duration above zero.
func TestRunLockWaitUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"run", "x.yaml", "--lock-wait", "0s"}, &stdout, &stderr)
	if code != ExitInvalidInput || !strings.Contains(stderr.String(), "--lock-wait 0s: a duration above zero") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// A cell the plan cannot resolve is a problem of the file, as
// validation's are: exit status 2, nothing started, no campaign recorded
// (issue 39: a published server whose client is on network published).
func TestUnplannedCellIsInvalidInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "published.yaml")
	if err := os.WriteFile(file, []byte("name: p\nfactors: {platform: [docker], network: [published]}\nworkloads: [{type: net.tcp_stream}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := file + ": cell 1 (net.tcp_stream network=published platform=docker): network published reaches the server through a port its engine publishes on this machine"
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"run", file, "--dry-run"}, &stdout, &stderr); code != ExitInvalidInput ||
		!strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "nothing was started") || stdout.Len() != 0 {
		t.Errorf("--dry-run: exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	// A run loads the file as calibrate does, before it opens the store.
	_, err := loadExperiment(spec.Options{Machine: machine()}, file)
	var ps spec.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps.Error(), want) {
		t.Errorf("loadExperiment: %v, want the one problem %q", err, want)
	}
}
