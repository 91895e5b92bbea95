// Package store is ctrbench's results database: one SQLite file holding
// campaigns, their cells, and every trial with its observations.
//
// Concurrency model: each DB holds a single SQLite connection
// (MaxOpenConns(1)), so writes from one process are serialised in Go rather
// than by SQLite lock polling. The file is in WAL mode, so other processes
// (e.g. `ctrbench report` during a run) read a consistent snapshot without
// blocking the writer, and a second writer waits up to busy_timeout (or its
// context's deadline, if sooner) for the write lock; then its write fails
// as a *LockedError that names the process holding the lock.
// Transactions begin IMMEDIATE so a read-then-write transaction never has to
// upgrade its lock, which in SQLite fails at once with SQLITE_BUSY instead of
// waiting.
//
// Durability: synchronous=FULL makes every commit fsync the WAL, so a trial
// returned by RecordTrial survives a crash or power loss of the benchmark
// host.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// ErrNotFound is returned (wrapped) when a campaign does not exist.
var ErrNotFound = errors.New("not found")

// ErrAmbiguous is returned (wrapped) when a campaign ID prefix matches more
// than one campaign.
var ErrAmbiguous = errors.New("ambiguous prefix")

// busyTimeoutMS is how long a connection waits for another process's write
// lock. Trial transactions are a handful of rows, so seconds is ample for
// another ctrbench; a lock held longer (a sqlite3 shell left in a
// transaction, a backup) is a *LockedError, and the orchestrator waits
// for it in its own way (holding trials in memory) rather than here.
const busyTimeoutMS = 5000

// DB is an open results database. It is safe for concurrent use.
type DB struct {
	db   *sql.DB
	path string
}

// Open opens the database at path, creating its parent directories, the
// file and the schema as needed, and migrating an older schema forward.
func Open(ctx context.Context, path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening results database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("creating directory for results database: %w", err)
	}
	sqldb, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("opening results database %s: %w", abs, err)
	}
	// One connection: see the package comment. Keeping it idle forever also
	// keeps the per-connection pragmas from being re-run needlessly.
	sqldb.SetMaxOpenConns(1)
	sqldb.SetMaxIdleConns(1)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)

	d := &DB{db: sqldb, path: abs}
	if err := d.migrate(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("opening results database %s: %w", abs, err)
	}
	return d, nil
}

// dsn builds a file: URI so that paths containing '?', '#' or '%' are not
// mistaken for URI syntax. The pragmas apply to every new connection.
func dsn(abs string) string {
	u := url.URL{Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// Path returns the absolute path of the database file.
func (d *DB) Path() string { return d.path }

// Close releases the connection. Committed data is already durable, so
// skipping Close (a crash) loses nothing that RecordTrial returned.
func (d *DB) Close() error {
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("closing results database: %w", err)
	}
	return nil
}

// inTx runs fn in a transaction, committing on success. If another
// process holds the file's write lock, it waits for it up to the busy
// timeout, or until ctx's deadline if that comes sooner, and then returns
// a *LockedError naming the holder. ctx's deadline bounds that wait and
// nothing else: fn runs under the context it is given, which ctx's
// cancellation ends but its deadline does not, so a transaction that
// began is not cut short for taking longer than the wait.
func (d *DB) inTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	wait := time.Duration(busyTimeoutMS) * time.Millisecond
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(time.Until(dl), wait), 0)
	}
	txCtx, cancel := withoutDeadline(ctx)
	defer cancel()
	conn, err := d.db.Conn(txCtx) // the one connection, this transaction's alone
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	defer conn.Close()
	if wait < busyTimeoutMS*time.Millisecond {
		if _, err := conn.ExecContext(txCtx, fmt.Sprintf("PRAGMA busy_timeout = %d", wait.Milliseconds())); err != nil {
			return fmt.Errorf("beginning transaction: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMS))
	}
	tx, err := conn.BeginTx(txCtx, nil)
	if err != nil {
		return d.locked(fmt.Errorf("beginning transaction: %w", err))
	}
	if err := fn(txCtx, tx); err != nil {
		tx.Rollback()
		return d.locked(err)
	}
	if err := tx.Commit(); err != nil {
		return d.locked(fmt.Errorf("committing: %w", err))
	}
	return nil
}

// withoutDeadline is ctx, its values and its cancellation, without its
// deadline.
func withoutDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	cancelled := func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel(context.Cause(ctx))
		}
	}
	cancelled() // now, not in AfterFunc's goroutine, if it is already
	stop := context.AfterFunc(ctx, cancelled)
	return out, func() { stop(); cancel(nil) }
}

// Check runs SQLite's own integrity check over the whole file: nil when
// it reports "ok", else what it found.
func (d *DB) Check(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if s != "ok" {
			found = append(found, s)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("integrity check of %s: %s", d.path, strings.Join(found, "; "))
	}
	return nil
}
