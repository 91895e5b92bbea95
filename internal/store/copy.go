package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/ctrbench/ctrbench/internal/result"
)

// CopyCampaigns copies campaigns (each an ID or unique prefix) from d into
// dst: each campaign's row as stored (status, times, environment, baseline,
// kind, owner, adaptive rule), its cells, and its trials with their
// observations, flags, what the agents saw, earlier attempts and
// histograms. It writes through the same calls a run does (CreateCampaign,
// AddCells, RecordTrial), so what it writes is what a run would have.
//
// Trials keep their IDs, so the copy reads back field for field as the
// original, trial IDs included: they are recorded in ID order across all
// the campaigns copied (which is why it takes them together, not one at a
// time), each after setting the trials table's AUTOINCREMENT counter to
// just below its ID. dst must not hold these campaigns, nor any trial with
// an ID at or above the smallest one copied: a fresh database is the
// intended destination (an artifact's results.db).
//
// The copy is not one transaction. dst's commits are not synced while it
// runs (a copy cut short is started again from scratch, not resumed);
// dst is synced as usual once it returns.
func (d *DB) CopyCampaigns(ctx context.Context, dst *DB, ids ...string) error {
	var trials []result.Trial
	copied := map[string]bool{}
	for _, id := range ids {
		c, err := d.Campaign(ctx, id)
		if err != nil {
			return fmt.Errorf("copying campaign: %w", err)
		}
		if copied[c.ID] {
			continue
		}
		copied[c.ID] = true
		ts, err := d.campaignForCopy(ctx, dst, c)
		if err != nil {
			return fmt.Errorf("copying campaign %s: %w", c.ID, err)
		}
		trials = append(trials, ts...)
	}
	slices.SortFunc(trials, func(a, b result.Trial) int { return cmp.Compare(a.ID, b.ID) })
	if err := dst.noTrialFrom(ctx, trials); err != nil {
		return err
	}
	if _, err := dst.db.ExecContext(ctx, `PRAGMA synchronous = OFF`); err != nil {
		return fmt.Errorf("copying campaigns: %w", err)
	}
	defer dst.db.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`)
	for _, t := range trials {
		if err := dst.recordWithID(ctx, t); err != nil {
			return fmt.Errorf("copying campaign %s: %w", t.CampaignID, err)
		}
	}
	return nil
}

// campaignForCopy writes campaign c's row and cells into dst and returns
// its trials, each with its histograms, to record there.
func (d *DB) campaignForCopy(ctx context.Context, dst *DB, c result.Campaign) ([]result.Trial, error) {
	cells, err := d.Cells(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	trials, err := d.Trials(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	hs, err := d.Histograms(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	for i := range trials {
		trials[i].Histograms = hs[trials[i].ID]
	}
	if err := dst.CreateCampaign(ctx, c); err != nil {
		return nil, err
	}
	if err := dst.AddCells(ctx, c.ID, cells); err != nil {
		return nil, err
	}
	return trials, nil
}

// noTrialFrom says whether the trials, sorted by ID, can keep their IDs in
// d: no trial of d has an ID at or above the first one.
func (d *DB) noTrialFrom(ctx context.Context, trials []result.Trial) error {
	if len(trials) == 0 {
		return nil
	}
	var top sql.NullInt64
	if err := d.db.QueryRowContext(ctx, `SELECT max(id) FROM trials`).Scan(&top); err != nil {
		return fmt.Errorf("copying campaigns: %w", err)
	}
	if top.Valid && top.Int64 >= trials[0].ID {
		return fmt.Errorf("copying campaigns: the destination %s already holds trial %d; the copied trials start at %d", d.path, top.Int64, trials[0].ID)
	}
	return nil
}

// recordWithID records trial t in d under its own ID: the trials table's
// AUTOINCREMENT counter is set to t.ID-1 first, and every trial already in
// d has a smaller ID (noTrialFrom, and the trials go in ID order).
func (d *DB) recordWithID(ctx context.Context, t result.Trial) error {
	res, err := d.db.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = ? WHERE name = 'trials'`, t.ID-1)
	if err != nil {
		return fmt.Errorf("trial %d: setting its ID: %w", t.Seq, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("trial %d: setting its ID: %w", t.Seq, err)
	} else if n == 0 {
		if _, err := d.db.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES ('trials', ?)`, t.ID-1); err != nil {
			return fmt.Errorf("trial %d: setting its ID: %w", t.Seq, err)
		}
	}
	id, err := d.RecordTrial(ctx, t)
	if err != nil {
		return err
	}
	if id != t.ID {
		return fmt.Errorf("trial %d was recorded as ID %d, not its own %d", t.Seq, id, t.ID)
	}
	return nil
}
