package swarm

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// hangingLogs is a log read that, the first hang times, writes part of the
// output and then never ends (as the swarm's log API sometimes does), and
// afterwards writes all of it.
func hangingLogs(hang int, calls *int) func(ctx context.Context, stdout, stderr io.Writer) error {
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		*calls++
		if *calls <= hang {
			_, _ = io.WriteString(stdout, "partial ")
			<-ctx.Done()
			return ctx.Err()
		}
		_, _ = io.WriteString(stdout, "the whole output\n")
		_, _ = io.WriteString(stderr, "a warning\n")
		return nil
	}
}

// TestRecordRetriesAHangingRead: a read of the record that does not end is
// abandoned and made anew, and what it wrote is not kept; a record that
// never comes is an error naming every read, not a hang.
func TestRecordRetriesAHangingRead(t *testing.T) {
	calls := 0
	out, errOut, err := record(context.Background(), hangingLogs(2, &calls), 3, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || string(out) != "the whole output\n" || string(errOut) != "a warning\n" {
		t.Fatalf("after %d reads: stdout %q, stderr %q", calls, out, errOut)
	}

	calls = 0
	out, _, err = record(context.Background(), hangingLogs(5, &calls), 3, 20*time.Millisecond)
	if err == nil || out != nil || calls != 3 {
		t.Fatalf("a record that never comes: %d reads, stdout %q, err %v", calls, out, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "read 3 of 3") {
		t.Fatalf("the error does not say what happened: %v", err)
	}
}

// TestRecordStopsWhenRemoved: once the instance is being removed (its
// watcher's context ends), no further read is made.
func TestRecordStopsWhenRemoved(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	fetch := hangingLogs(5, &calls)
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, _, err := record(ctx, fetch, 3, time.Hour)
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("after the context ended: %d reads, err %v", calls, err)
	}
}
