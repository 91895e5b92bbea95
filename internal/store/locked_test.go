package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// holdLock starts a second process that holds the file's write lock (BEGIN
// IMMEDIATE, as a sqlite3 shell left in a transaction does) and returns
// its pid and the function that makes it commit and waits for it to end.
func holdLock(t *testing.T, path string) (int, func()) {
	t.Helper()
	cmd := helperCmd(t, "hold", path, 0)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the lock holder: %v", err)
		}
	}
	t.Cleanup(release)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("the lock holder said %q (%v)", line, err)
	}
	return cmd.Process.Pid, release
}

// Another process holds the write lock: a write waits only until its
// context's deadline, fails as a *LockedError that names the holder's pid
// and command, leaves nothing of itself in the file, and succeeds once
// the holder commits.
func TestLockedByAnotherProcess(t *testing.T) {
	d, path := openTest(t)
	setup(t, d, "c")
	record(t, d, sampleTrial("c", 1, 1))
	pid, release := holdLock(t, path)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.RecordTrial(ctx, sampleTrial("c", 2, 2))
	took := time.Since(start)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("RecordTrial under another's lock: %v, want a *LockedError", err)
	}
	if took > 3*time.Second {
		t.Errorf("it waited %s for the lock, past its deadline of 300ms", took)
	}
	wantHolder := fmt.Sprintf("pid %d (store.test) holds its write lock", pid)
	if le.Path != path || le.Holder != wantHolder || code(le.Err) != sqliteBusy {
		t.Errorf("path %q holder %q code %d, want %q, %q, SQLITE_BUSY", le.Path, le.Holder, code(le.Err), path, wantHolder)
	}
	msg := err.Error()
	if !strings.Contains(msg, "recording trial 2: the results file "+path+" is locked by another process ("+wantHolder+")") || strings.Contains(msg, "disk") {
		t.Errorf("message: %s", msg)
	}
	if IsFull(err) {
		t.Error("a lock reads as a full disk")
	}
	// A deadline already past is one attempt, not an error of its own.
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := d.RecordTrial(past, sampleTrial("c", 2, 2)); !errors.As(err, &le) {
		t.Errorf("with a deadline past: %v, want a *LockedError", err)
	}
	// The other writes say so too.
	fctx, cancel3 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel3()
	if err := d.FinishCampaign(fctx, "c", "done", base); !errors.As(err, &le) {
		t.Errorf("FinishCampaign under another's lock: %v", err)
	}

	release()
	record(t, d, sampleTrial("c", 2, 2))
	trials, err := d.Trials(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 2 || trials[0].Seq != 1 || trials[1].Seq != 2 {
		t.Errorf("after the holder let go: %d trials %+v", len(trials), trials)
	}
	if err := d.Check(context.Background()); err != nil {
		t.Error(err)
	}
}

// A deadline bounds the wait for the lock and nothing else: a transaction
// that began writes whole however short the deadline, and the busy
// timeout is back to its own for the next write.
func TestDeadlineBoundsOnlyTheWait(t *testing.T) {
	d, _ := openTest(t)
	setup(t, d, "c")
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	tr := sampleTrial("c", 1, 1)
	for range 2000 {
		tr.Observations = append(tr.Observations, tr.Observations[0])
	}
	if _, err := d.RecordTrial(ctx, tr); err != nil {
		t.Fatalf("a free file, a deadline of 1ms: %v", err)
	}
	if n := count(t, d, "observations"); n != len(tr.Observations) {
		t.Errorf("%d observations stored, want %d", n, len(tr.Observations))
	}
	var ms int
	if err := d.db.QueryRow("PRAGMA busy_timeout").Scan(&ms); err != nil || ms != busyTimeoutMS {
		t.Errorf("busy_timeout after a write with a deadline: %d %v, want %d", ms, err, busyTimeoutMS)
	}
	// Cancelled is cancelled.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := d.RecordTrial(cctx, sampleTrial("c", 2, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

// A full disk (here: the file at its max_page_count) is SQLITE_FULL:
// IsFull, and not a lock.
func TestFullIsNotLocked(t *testing.T) {
	d, _ := openTest(t)
	setup(t, d, "c")
	var pages int
	if err := d.db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	var err error
	for seq := 1; seq <= 50 && err == nil; seq++ {
		_, err = d.RecordTrial(context.Background(), sampleTrial("c", seq, 1))
	}
	var le *LockedError
	if !IsFull(err) || errors.As(err, &le) {
		t.Errorf("a file that cannot grow: %v (full %v)", err, IsFull(err))
	}
	if IsFull(errors.New("database or disk is full")) {
		t.Error("IsFull reads messages")
	}
}
