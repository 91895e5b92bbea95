package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// RecordTrial stores a finished trial and its observations, each under its
// identity (Observation.ID), in one transaction and returns the trial's ID.
// It is called as each trial ends; when it returns the trial is on disk
// (synchronous=FULL), so an interrupted campaign can resume after it. A
// file another process holds locked is a *LockedError once the wait for
// it is over (the busy timeout, or ctx's deadline if sooner): nothing of
// the trial is written, and it can be recorded again later.
func (d *DB) RecordTrial(ctx context.Context, t result.Trial) (int64, error) {
	for _, o := range t.Observations {
		// SQLite would silently store NaN as NULL. A workload reporting NaN
		// or Inf is a bug in its parser; surface it rather than hide it.
		if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) {
			return 0, fmt.Errorf("recording trial %d: observation %q has non-finite value %v", t.Seq, o.Metric, o.Value)
		}
		// Whose value it is goes in Scope, Kind, Role and Index; a name
		// with a dot is a writer still putting that in prefixes.
		if strings.Contains(o.Metric, ".") {
			return 0, fmt.Errorf("recording trial %d: observation %q: a metric name has no dots (scope, kind, role and index are fields of their own)", t.Seq, o.Metric)
		}
	}
	var id int64
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		attempts, err := attemptsJSON(t.Attempts)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO trials
			(campaign_id, cell_id, seq, repetition, warmup, status, error, raw, started, ended, flags, seen_json, failed_by, attempts_json)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.CampaignID, t.CellID, t.Seq, t.Repetition, t.Warmup, string(t.Status),
			t.Error, t.Raw, encodeTime(t.Started), encodeTime(t.Ended), t.Flags, seenJSON(t.Seen), t.FailedBy, attempts)
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		if err := insertHistograms(ctx, tx, id, t.Histograms); err != nil {
			return err
		}
		if len(t.Observations) == 0 {
			return nil
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO observations
			(trial_id, metric, scope, kind, role, idx, value, unit, better) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, o := range t.Observations {
			m := o.ID()
			if _, err := stmt.ExecContext(ctx, id, m.Metric, string(m.Scope), string(m.Kind), m.Role, m.Index,
				o.Value, o.Unit, string(o.Better)); err != nil {
				return fmt.Errorf("observation %q: %w", m, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recording trial %d: %w", t.Seq, err)
	}
	return id, nil
}

// Trials returns a campaign's trials ordered by Seq, each with its
// observations in insertion order. An observation's identity comes back
// with its defaults filled in, so its ID() is the one it was written with.
func (d *DB) Trials(ctx context.Context, campaignID string) ([]result.Trial, error) {
	trials, err := d.trialRows(ctx, campaignID)
	if err != nil {
		return nil, fmt.Errorf("reading trials of campaign %s: %w", campaignID, err)
	}
	if err := d.fillObservations(ctx, campaignID, trials); err != nil {
		return nil, fmt.Errorf("reading observations of campaign %s: %w", campaignID, err)
	}
	return trials, nil
}

func (d *DB) trialRows(ctx context.Context, campaignID string) ([]result.Trial, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, campaign_id, cell_id, seq, repetition, warmup,
		status, error, raw, started, ended, flags, seen_json, failed_by, attempts_json FROM trials WHERE campaign_id = ? ORDER BY seq`, campaignID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []result.Trial
	for rows.Next() {
		var (
			t              result.Trial
			status         string
			started, ended sql.NullString
			seen, attempts string
		)
		if err := rows.Scan(&t.ID, &t.CampaignID, &t.CellID, &t.Seq, &t.Repetition, &t.Warmup,
			&status, &t.Error, &t.Raw, &started, &ended, &t.Flags, &seen, &t.FailedBy, &attempts); err != nil {
			return nil, err
		}
		if attempts != "" && attempts != "[]" {
			if err := json.Unmarshal([]byte(attempts), &t.Attempts); err != nil {
				return nil, fmt.Errorf("trial %d attempts_json: %w", t.Seq, err)
			}
		}
		t.Status = result.Status(status)
		if seen != "" && seen != "{}" {
			if err := json.Unmarshal([]byte(seen), &t.Seen); err != nil {
				return nil, fmt.Errorf("trial %d seen_json: %w", t.Seq, err)
			}
		}
		if t.Started, err = decodeTime(started); err != nil {
			return nil, fmt.Errorf("trial %d started: %w", t.Seq, err)
		}
		if t.Ended, err = decodeTime(ended); err != nil {
			return nil, fmt.Errorf("trial %d ended: %w", t.Seq, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// fillObservations attaches observations to trials with a second query.
// The two reads are separate snapshots, but a trial and its observations
// commit together, so every trial already read has all its observations
// visible; observations of trials committed in between are skipped.
func (d *DB) fillObservations(ctx context.Context, campaignID string, trials []result.Trial) error {
	if len(trials) == 0 {
		return nil
	}
	byID := make(map[int64]*result.Trial, len(trials))
	for i := range trials {
		byID[trials[i].ID] = &trials[i]
	}
	rows, err := d.db.QueryContext(ctx, `SELECT o.trial_id, o.metric, o.scope, o.kind, o.role, o.idx, o.value, o.unit, o.better
		FROM observations o JOIN trials t ON t.id = o.trial_id
		WHERE t.campaign_id = ? ORDER BY o.id`, campaignID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			trialID             int64
			o                   result.Observation
			scope, kind, better string
		)
		if err := rows.Scan(&trialID, &o.Metric, &scope, &kind, &o.Role, &o.Index, &o.Value, &o.Unit, &better); err != nil {
			return err
		}
		o.Scope, o.Kind, o.Better = result.Scope(scope), result.Kind(kind), result.Better(better)
		if t := byID[trialID]; t != nil {
			t.Observations = append(t.Observations, o)
		}
	}
	return rows.Err()
}

// seenJSON encodes what the agents saw; an empty map is "{}".
func seenJSON(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// attemptsJSON encodes a trial's earlier attempts; none is "[]".
func attemptsJSON(as []result.Attempt) (string, error) {
	if len(as) == 0 {
		return "[]", nil
	}
	utc := make([]result.Attempt, len(as))
	for i, a := range as {
		a.Started, a.Ended = a.Started.UTC(), a.Ended.UTC()
		utc[i] = a
	}
	b, err := json.Marshal(utc)
	return string(b), err
}
