package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/result"
)

// insertHistograms stores a trial's histograms in its transaction.
func insertHistograms(ctx context.Context, tx *sql.Tx, trialID int64, hs []result.Histogram) error {
	if len(hs) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO histograms (trial_id, metric, scope, role, idx, unit, data) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, h := range hs {
		scope := h.Scope
		if scope == "" {
			scope = result.ScopeTrial
		}
		if _, err := stmt.ExecContext(ctx, trialID, h.Metric, string(scope), h.Role, h.Index, h.Unit, h.Data); err != nil {
			return fmt.Errorf("histogram %q: %w", h.Metric, err)
		}
	}
	return nil
}

// Histograms returns the histograms of a campaign's trials by trial ID,
// each trial's in the order they were recorded. They are apart from
// Trials because reports read them only to pool or plot distributions.
func (d *DB) Histograms(ctx context.Context, campaignID string) (map[int64][]result.Histogram, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT h.trial_id, h.metric, h.scope, h.role, h.idx, h.unit, h.data
		FROM histograms h JOIN trials t ON t.id = h.trial_id WHERE t.campaign_id = ? ORDER BY h.id`, campaignID)
	if err != nil {
		return nil, fmt.Errorf("reading histograms of campaign %s: %w", campaignID, err)
	}
	defer rows.Close()
	out := map[int64][]result.Histogram{}
	for rows.Next() {
		var (
			id    int64
			h     result.Histogram
			scope string
		)
		if err := rows.Scan(&id, &h.Metric, &scope, &h.Role, &h.Index, &h.Unit, &h.Data); err != nil {
			return nil, fmt.Errorf("reading histograms of campaign %s: %w", campaignID, err)
		}
		h.Scope = result.Scope(scope)
		out[id] = append(out[id], h)
	}
	return out, rows.Err()
}
