package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// step is one schema migration: SQL, then, for what SQL cannot express,
// Go over the data, in the same transaction.
type step struct {
	sql  string
	data func(context.Context, *sql.Tx) error
}

// migrations[i] takes the schema from version i to version i+1; the current
// version lives in PRAGMA user_version. Never edit a released step: append a
// new one, so existing result files upgrade in place.
var migrations = []step{
	// 1: initial schema.
	{sql: `
CREATE TABLE campaigns (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	spec_path     TEXT NOT NULL,
	spec_text     TEXT NOT NULL,
	seed          INTEGER NOT NULL,
	started       TEXT,
	ended         TEXT,
	status        TEXT NOT NULL,
	env_json      TEXT NOT NULL,
	baseline_json TEXT NOT NULL
);
CREATE TABLE cells (
	campaign_id   TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
	id            INTEGER NOT NULL,
	workload      TEXT NOT NULL,
	workload_type TEXT NOT NULL,
	factors_json  TEXT NOT NULL,
	params_json   TEXT NOT NULL,
	PRIMARY KEY (campaign_id, id)
);
CREATE TABLE trials (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	campaign_id TEXT NOT NULL,
	cell_id     INTEGER NOT NULL,
	seq         INTEGER NOT NULL,
	repetition  INTEGER NOT NULL,
	warmup      INTEGER NOT NULL,
	status      TEXT NOT NULL,
	error       TEXT NOT NULL,
	raw         TEXT NOT NULL,
	started     TEXT,
	ended       TEXT,
	FOREIGN KEY (campaign_id, cell_id) REFERENCES cells(campaign_id, id) ON DELETE CASCADE,
	UNIQUE (campaign_id, seq)
);
CREATE INDEX trials_campaign ON trials(campaign_id);
-- id is an explicit rowid alias so insertion order survives VACUUM.
-- value is NOT NULL because SQLite turns NaN into NULL; RecordTrial rejects
-- NaN first, this is the backstop.
CREATE TABLE observations (
	id       INTEGER PRIMARY KEY,
	trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
	metric   TEXT NOT NULL,
	value    REAL NOT NULL,
	unit     TEXT NOT NULL,
	better   TEXT NOT NULL
);
CREATE INDEX observations_trial ON observations(trial_id);
`},
	// 2: flags on a trial that ran but whose conditions were not as
	// planned (antagonists that did not cover the measured window).
	{sql: `ALTER TABLE trials ADD COLUMN flags TEXT NOT NULL DEFAULT '';`},
	// 3: what the agents saw of their environment (interfaces, limits,
	// filesystem), as a JSON object of strings.
	{sql: `ALTER TABLE trials ADD COLUMN seen_json TEXT NOT NULL DEFAULT '{}';`},
	// 4: a metric's identity in columns of its own (result.MetricID)
	// instead of prefixes on its name; metric holds the bare name. The
	// defaults are the trial's own measurement.
	{sql: `
ALTER TABLE observations ADD COLUMN scope TEXT NOT NULL DEFAULT 'trial';
ALTER TABLE observations ADD COLUMN kind TEXT NOT NULL DEFAULT 'measure';
ALTER TABLE observations ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE observations ADD COLUMN idx INTEGER NOT NULL DEFAULT 0;
`, data: splitMetricNames},
	// 5: what failed a trial (the workload or the platform) and its
	// earlier attempts; the distributions agents recorded; a campaign's
	// kind (calibration) and the process that runs it.
	{sql: `
ALTER TABLE trials ADD COLUMN failed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN attempts_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE campaigns ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN owner TEXT NOT NULL DEFAULT '';
UPDATE trials SET failed_by = 'workload' WHERE status != 'ok';
CREATE TABLE histograms (
	id       INTEGER PRIMARY KEY,
	trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
	metric   TEXT NOT NULL,
	scope    TEXT NOT NULL DEFAULT 'trial',
	role     TEXT NOT NULL DEFAULT '',
	idx      INTEGER NOT NULL DEFAULT 0,
	unit     TEXT NOT NULL,
	data     BLOB NOT NULL
);
CREATE INDEX histograms_trial ON histograms(trial_id);
`},
	// 6: the adaptive repetition rule a campaign ran by, as JSON ('' for a
	// fixed number of repetitions). Campaigns stored before this version
	// read '' here; their rule is still in spec_text, for a caller that
	// can parse it (cli.results).
	{sql: `ALTER TABLE campaigns ADD COLUMN adaptive_json TEXT NOT NULL DEFAULT '';`},
}

// SchemaVersion is the schema version this build writes.
const SchemaVersion = 6

func init() {
	if len(migrations) != SchemaVersion {
		panic("store: SchemaVersion does not match the migration list")
	}
}

func userVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("reading schema version: %w", err)
	}
	return v, nil
}

// firstVersion reads the schema version when a handle opens. While another
// process creates the same new file, switching it to WAL, SQLite may answer
// SQLITE_BUSY at once instead of calling the busy handler (it would risk a
// deadlock); such a read is tried again until the busy timeout.
func firstVersion(ctx context.Context, db *sql.DB) (int, error) {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for {
		v, err := userVersion(ctx, db)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// migrate brings the schema up to SchemaVersion. The first check is outside
// a transaction so that a reader opening a current database never needs the
// write lock (it would wait behind a running campaign's commits).
func (d *DB) migrate(ctx context.Context) error {
	v, err := firstVersion(ctx, d.db)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("schema version %d is newer than this ctrbench supports (%d)", v, SchemaVersion)
	}
	if v == SchemaVersion {
		return nil
	}
	return d.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Re-read under the write lock: another process may have migrated
		// between our check and BEGIN IMMEDIATE.
		v, err := userVersion(ctx, tx)
		if err != nil {
			return err
		}
		for ; v < SchemaVersion; v++ {
			m := migrations[v]
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migrating schema to version %d: %w", v+1, err)
			}
			if m.data == nil {
				continue
			}
			if err := m.data(ctx, tx); err != nil {
				return fmt.Errorf("migrating data to schema version %d: %w", v+1, err)
			}
		}
		// PRAGMA takes no bound parameters; v is an int we control.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
			return fmt.Errorf("setting schema version: %w", err)
		}
		return nil
	})
}
