package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Subprocess helpers: the test binary re-runs itself with helperEnv set to
// act as a second ctrbench process (a campaign writer that may crash).
const (
	helperEnv  = "CTRBENCH_STORE_TEST_HELPER"
	helperPath = "CTRBENCH_STORE_TEST_PATH"
	helperN    = "CTRBENCH_STORE_TEST_N"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode, os.Getenv(helperPath)); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(mode, path string) error {
	ctx := context.Background()
	d, err := Open(ctx, path)
	if err != nil {
		return err
	}
	switch mode {
	case "crash":
		// Record one trial, tell the parent, then die without Close: the
		// trial must already be on disk.
		if _, err := d.RecordTrial(ctx, sampleTrial("c", 1, 1)); err != nil {
			return err
		}
		fmt.Println("recorded")
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		select {} // wait for the signal to land
	case "write":
		n, _ := strconv.Atoi(os.Getenv(helperN))
		for seq := 1; seq <= n; seq++ {
			if _, err := d.RecordTrial(ctx, sampleTrial("c", seq, 1+seq%2)); err != nil {
				return err
			}
		}
		return d.Close()
	case "hold":
		// Hold the write lock as a sqlite3 shell left in a transaction
		// does, until the parent closes our standard input.
		conn, err := d.db.Conn(ctx)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return err
		}
		conn.Close()
		return d.Close()
	}
	return fmt.Errorf("unknown mode %q", mode)
}

func helperCmd(t *testing.T, mode, path string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPath+"="+path, helperN+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

func TestOpenCreatesDirAndPragmas(t *testing.T) {
	// Characters that mean something in a file: URI must still work.
	path := filepath.Join(t.TempDir(), "a b", "x?y#z%20", "results.db")
	d := openAt(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not at %s: %v", path, err)
	}
	ctx := context.Background()
	for pragma, want := range map[string]string{
		"journal_mode": "wal", "foreign_keys": "1", "synchronous": "2",
		"busy_timeout": "5000", "user_version": strconv.Itoa(SchemaVersion),
	} {
		var got string
		if err := d.db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	setup(t, d, "c")
	record(t, d, sampleTrial("c", 1, 1))
	schema := schemaText(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d2 := openAt(t, path)
	if got := schemaText(t, d2); got != schema {
		t.Errorf("schema changed on reopen:\n%s\nwas\n%s", got, schema)
	}
	trials, err := d2.Trials(ctx, "c")
	if err != nil || len(trials) != 1 || len(trials[0].Observations) != 2 {
		t.Fatalf("after reopen: trials = %v, %v", trials, err)
	}
	// AUTOINCREMENT continues rather than restarting.
	if id := record(t, d2, sampleTrial("c", 2, 1)); id <= trials[0].ID {
		t.Errorf("new trial ID %d not after %d", id, trials[0].ID)
	}
}

func schemaText(t *testing.T, d *DB) string {
	t.Helper()
	rows, err := d.db.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var s string
	for rows.Next() {
		var typ, name, sql string
		if err := rows.Scan(&typ, &name, &sql); err != nil {
			t.Fatal(err)
		}
		s += typ + " " + name + ": " + sql + "\n"
	}
	return s
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	d, path := openTest(t)
	if _, err := d.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if d2, err := Open(context.Background(), path); err == nil {
		d2.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
}

// TestCrashAfterRecordTrial kills a writer process right after RecordTrial
// returns, without Close, and checks the trial survived.
func TestCrashAfterRecordTrial(t *testing.T) {
	d, path := openTest(t)
	setup(t, d, "c")
	d.Close()

	cmd := helperCmd(t, "crash", path, 0)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	err = cmd.Wait()
	if line != "recorded\n" {
		t.Fatalf("helper said %q (exit: %v)", line, err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Exited() {
		t.Fatalf("helper was not killed: %v", err)
	}
	// The WAL was never checkpointed: reopening must recover from it.
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Logf("no WAL left behind (%v); recovery path not exercised", err)
	}

	d2 := openAt(t, path)
	trials, err := d2.Trials(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 1 || trials[0].Seq != 1 || len(trials[0].Observations) != 2 {
		t.Fatalf("after crash: %+v", trials)
	}
}

// TestReopenWithoutClose simulates a crash in-process: the first handle is
// abandoned, not closed, and a new one sees everything it committed.
func TestReopenWithoutClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() }) // only so the temp dir can be removed
	setup(t, d, "c")
	id := record(t, d, sampleTrial("c", 1, 1))

	d2 := openAt(t, path)
	trials, err := d2.Trials(ctx, "c")
	if err != nil || len(trials) != 1 || trials[0].ID != id {
		t.Fatalf("trials = %v, %v", trials, err)
	}
}

// checkSnapshot verifies what a reader sees mid-campaign: trials are a
// prefix 1..n by seq, each complete with its observations (never a trial
// without them), and n never shrinks.
func checkSnapshot(ctx context.Context, r *DB, last *int) error {
	trials, err := r.Trials(ctx, "c")
	if err != nil {
		return err
	}
	for i, tr := range trials {
		if tr.Seq != i+1 || len(tr.Observations) != 2 {
			return fmt.Errorf("trial %d: seq %d with %d observations", i, tr.Seq, len(tr.Observations))
		}
	}
	if len(trials) < *last {
		return fmt.Errorf("trial count went from %d to %d", *last, len(trials))
	}
	*last = len(trials)
	if _, err := r.Campaign(ctx, "c"); err != nil {
		return err
	}
	return nil
}

// TestConcurrentReaderOtherHandle writes from one DB handle while another
// handle on the same file reads.
func TestConcurrentReaderOtherHandle(t *testing.T) {
	ctx := context.Background()
	w, path := openTest(t)
	setup(t, w, "c")
	r := openAt(t, path)

	const n = 100
	var wg sync.WaitGroup
	wg.Add(1)
	writeErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		for seq := 1; seq <= n; seq++ {
			if _, err := w.RecordTrial(ctx, sampleTrial("c", seq, 1+seq%2)); err != nil {
				writeErr <- err
				return
			}
		}
		close(writeErr)
	}()
	last, reads := 0, 0
	for last < n {
		if err := checkSnapshot(ctx, r, &last); err != nil {
			t.Fatal(err)
		}
		reads++
		select {
		case err := <-writeErr:
			if err != nil {
				t.Fatal(err)
			}
		default:
		}
	}
	wg.Wait()
	t.Logf("%d reads during %d writes", reads, n)
}

// TestConcurrentReaderOtherProcess is the `ctrbench report` during a run
// case: the writer is another process.
func TestConcurrentReaderOtherProcess(t *testing.T) {
	ctx := context.Background()
	r, path := openTest(t)
	setup(t, r, "c")

	const n = 200
	cmd := helperCmd(t, "write", path, n)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	last, midway := 0, 0
	deadline := time.After(2 * time.Minute)
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer process: %v", err)
			}
			finished = true
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("writer process timed out")
		default:
		}
		if err := checkSnapshot(ctx, r, &last); err != nil {
			t.Fatal(err)
		}
		if last > 0 && last < n {
			midway++
		}
	}
	t.Logf("%d reads saw a campaign in progress", midway)
	if last != n {
		t.Errorf("read %d trials after writer finished, want %d", last, n)
	}
}

// TestConcurrentWriters has two handles write different campaigns at once:
// busy_timeout and BEGIN IMMEDIATE must make them wait, not fail.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openAt(t, path)
	setup(t, a, "a")
	setup(t, b, "b")
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, w := range []struct {
		d  *DB
		id string
	}{{a, "a"}, {b, "b"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; seq <= n; seq++ {
				if _, err := w.d.RecordTrial(ctx, sampleTrial(w.id, seq, 1)); err != nil {
					errs <- err
					return
				}
				if err := w.d.SetCampaignEnv(ctx, w.id, map[string]string{"k": strconv.Itoa(seq)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		done, err := a.Trials(ctx, id)
		if err != nil || len(done) != n {
			t.Errorf("campaign %s: %d done, %v", id, len(done), err)
		}
	}
}

// TestConcurrentOpenFreshFile has several handles create the same new
// database at once: exactly one may run the migration, none may fail.
func TestConcurrentOpenFreshFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	const n = 8
	var wg sync.WaitGroup
	dbs := make([]*DB, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = Open(context.Background(), path)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	setup(t, dbs[0], "c")
	if _, err := dbs[n-1].Campaign(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}
