package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/result"
)

// splitMetricNames is schema version 4's data step. Files before it stored
// a metric's identity as prefixes on its name ("pair3.server.throughput",
// "antagonist2.telemetry.cpu_seconds"); it reads each name back with
// result.ParseMetricName into the identity columns and leaves the bare name
// in metric. Whether an unqualified name is the pairs' aggregate depends on
// the trial, so a trial counts as one of several pairs when any of its
// names is a pair's or a statistic across pairs.
func splitMetricNames(ctx context.Context, tx *sql.Tx) error {
	type observation struct {
		id, trial int64
		name      string
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, trial_id, metric FROM observations`)
	if err != nil {
		return fmt.Errorf("reading metric names: %w", err)
	}
	var all []observation
	pairs := map[int64]bool{}
	for rows.Next() {
		var o observation
		if err := rows.Scan(&o.id, &o.trial, &o.name); err != nil {
			rows.Close()
			return fmt.Errorf("reading metric names: %w", err)
		}
		all = append(all, o)
		if id := result.ParseMetricName(o.name, false); id.Scope == result.ScopePair || id.Kind == result.KindPairs {
			pairs[o.trial] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading metric names: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, `UPDATE observations
		SET metric = ?, scope = ?, kind = ?, role = ?, idx = ? WHERE id = ?`)
	if err != nil {
		return fmt.Errorf("preparing the identity update: %w", err)
	}
	defer stmt.Close()
	for _, o := range all {
		id := result.ParseMetricName(o.name, pairs[o.trial])
		if id == (result.MetricID{Metric: o.name, Scope: result.ScopeTrial, Kind: result.KindMeasure}) {
			continue // the columns' defaults already say so
		}
		if _, err := stmt.ExecContext(ctx, id.Metric, string(id.Scope), string(id.Kind), id.Role, id.Index, o.id); err != nil {
			return fmt.Errorf("observation %d (%q): %w", o.id, o.name, err)
		}
	}
	return nil
}
