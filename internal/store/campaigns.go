package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

const campaignCols = `id, name, spec_path, spec_text, seed, started, ended, status, env_json, baseline_json, kind, owner, adaptive_json`

// CreateCampaign inserts a new campaign. Env and Baseline are stored as
// JSON text.
func (d *DB) CreateCampaign(ctx context.Context, c result.Campaign) error {
	if c.ID == "" {
		return fmt.Errorf("creating campaign: empty ID")
	}
	env, err := encodeMap(c.Env)
	if err != nil {
		return fmt.Errorf("creating campaign %s: encoding env: %w", c.ID, err)
	}
	baseline, err := encodeMap(c.Baseline)
	if err != nil {
		return fmt.Errorf("creating campaign %s: encoding baseline: %w", c.ID, err)
	}
	adaptive := ""
	if c.Adaptive != nil {
		b, err := json.Marshal(c.Adaptive)
		if err != nil {
			return fmt.Errorf("creating campaign %s: encoding adaptive rule: %w", c.ID, err)
		}
		adaptive = string(b)
	}
	err = d.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO campaigns (`+campaignCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, c.SpecPath, c.SpecText, c.Seed,
			encodeTime(c.Started), encodeTime(c.Ended), c.Status, env, baseline, c.Kind, c.Owner, adaptive)
		return err
	})
	if err != nil {
		return fmt.Errorf("creating campaign %s: %w", c.ID, err)
	}
	return nil
}

// ResumeCampaign records that owner runs the campaign again: running, no
// end time yet.
func (d *DB) ResumeCampaign(ctx context.Context, id, owner string) error {
	return d.updateCampaign(ctx, "resuming", id, `status = 'running', ended = NULL, owner = ?`, owner)
}

// FinishCampaign records a campaign's final status and end time.
func (d *DB) FinishCampaign(ctx context.Context, id, status string, ended time.Time) error {
	return d.updateCampaign(ctx, "finishing", id, `status = ?, ended = ?`, status, encodeTime(ended))
}

// updateCampaign sets columns of one campaign; a campaign that does not
// exist is ErrNotFound.
func (d *DB) updateCampaign(ctx context.Context, doing, id, set string, args ...any) error {
	var n int64
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE campaigns SET `+set+` WHERE id = ?`, append(args, id)...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("%s campaign %s: %w", doing, id, err)
	}
	if n == 0 {
		return fmt.Errorf("%s campaign %q: %w", doing, id, ErrNotFound)
	}
	return nil
}

// SetCampaignEnv merges env into the campaign's stored environment; keys
// in env overwrite existing ones, others are kept. This lets facts learned
// mid-run (e.g. an image digest) join the fingerprint taken at start.
func (d *DB) SetCampaignEnv(ctx context.Context, id string, env map[string]string) error {
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT env_json FROM campaigns WHERE id = ?`, id).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("campaign %q: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		cur, err := decodeMap(raw)
		if err != nil {
			return err
		}
		if cur == nil {
			cur = make(map[string]string, len(env))
		}
		maps.Copy(cur, env)
		merged, err := encodeMap(cur)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE campaigns SET env_json = ? WHERE id = ?`, merged, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("setting env of campaign %s: %w", id, err)
	}
	return nil
}

// Campaign returns the campaign with the given ID or, failing an exact
// match, the only campaign whose ID starts with it (like a git short hash).
func (d *DB) Campaign(ctx context.Context, id string) (result.Campaign, error) {
	if id == "" {
		return result.Campaign{}, fmt.Errorf("campaign %q: %w", id, ErrNotFound)
	}
	c, err := d.oneCampaign(ctx, `WHERE id = ?`, id)
	if !errors.Is(err, ErrNotFound) {
		return c, err
	}
	// substr/length rather than LIKE: LIKE is case-insensitive and treats
	// '_' and '%' in the prefix as wildcards.
	const limit = 10
	rows, err := d.db.QueryContext(ctx, `SELECT id FROM campaigns
		WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2`, id, limit+1)
	if err != nil {
		return result.Campaign{}, fmt.Errorf("looking up campaign %s: %w", id, err)
	}
	var ids []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return result.Campaign{}, fmt.Errorf("looking up campaign %s: %w", id, err)
		}
		ids = append(ids, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return result.Campaign{}, fmt.Errorf("looking up campaign %s: %w", id, err)
	}
	switch {
	case len(ids) == 0:
		return result.Campaign{}, fmt.Errorf("campaign %q: %w", id, ErrNotFound)
	case len(ids) == 1:
		c, err := d.oneCampaign(ctx, `WHERE id = ?`, ids[0])
		if errors.Is(err, ErrNotFound) { // deleted since the prefix scan
			return c, fmt.Errorf("campaign %q: %w", id, ErrNotFound)
		}
		return c, err
	case len(ids) > limit:
		ids = append(ids[:limit], "...")
	}
	return result.Campaign{}, fmt.Errorf("campaign %q: %w: matches %s", id, ErrAmbiguous, strings.Join(ids, ", "))
}

// LatestCampaign returns the most recently started campaign.
func (d *DB) LatestCampaign(ctx context.Context) (result.Campaign, error) {
	c, err := d.oneCampaign(ctx, `ORDER BY started DESC, id DESC LIMIT 1`)
	if errors.Is(err, ErrNotFound) {
		return c, fmt.Errorf("latest campaign: %w", ErrNotFound)
	}
	return c, err
}

// Campaigns returns all campaigns, newest first.
func (d *DB) Campaigns(ctx context.Context) ([]result.Campaign, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+campaignCols+` FROM campaigns ORDER BY started DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("listing campaigns: %w", err)
	}
	defer rows.Close()
	var out []result.Campaign
	for rows.Next() {
		c, err := scanCampaign(rows)
		if err != nil {
			return nil, fmt.Errorf("listing campaigns: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing campaigns: %w", err)
	}
	return out, nil
}

// oneCampaign runs a single-row campaign query; no row is a bare
// ErrNotFound for the caller to wrap with what it was looking for.
func (d *DB) oneCampaign(ctx context.Context, tail string, args ...any) (result.Campaign, error) {
	row := d.db.QueryRowContext(ctx, `SELECT `+campaignCols+` FROM campaigns `+tail, args...)
	c, err := scanCampaign(row)
	if errors.Is(err, sql.ErrNoRows) {
		return result.Campaign{}, ErrNotFound
	}
	if err != nil {
		return result.Campaign{}, fmt.Errorf("reading campaign: %w", err)
	}
	return c, nil
}

func scanCampaign(s scanner) (result.Campaign, error) {
	var (
		c              result.Campaign
		started, ended sql.NullString
		env, baseline  string
		adaptive       string
	)
	if err := s.Scan(&c.ID, &c.Name, &c.SpecPath, &c.SpecText, &c.Seed,
		&started, &ended, &c.Status, &env, &baseline, &c.Kind, &c.Owner, &adaptive); err != nil {
		return c, err
	}
	if adaptive != "" {
		c.Adaptive = new(result.Adaptive)
		if err := json.Unmarshal([]byte(adaptive), c.Adaptive); err != nil {
			return c, fmt.Errorf("campaign %s adaptive rule: %w", c.ID, err)
		}
	}
	var err error
	if c.Started, err = decodeTime(started); err != nil {
		return c, fmt.Errorf("campaign %s started: %w", c.ID, err)
	}
	if c.Ended, err = decodeTime(ended); err != nil {
		return c, fmt.Errorf("campaign %s ended: %w", c.ID, err)
	}
	if c.Env, err = decodeMap(env); err != nil {
		return c, fmt.Errorf("campaign %s env: %w", c.ID, err)
	}
	if c.Baseline, err = decodeMap(baseline); err != nil {
		return c, fmt.Errorf("campaign %s baseline: %w", c.ID, err)
	}
	vocab.CanonicalFactors(c.Baseline) // as the cells' factors
	return c, nil
}
