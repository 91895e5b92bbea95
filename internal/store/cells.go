package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// AddCells stores a campaign's cells in one transaction, so a campaign never
// has half its design recorded. Factors and Params are stored as JSON text.
func (d *DB) AddCells(ctx context.Context, campaignID string, cells []result.Cell) error {
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO cells
			(campaign_id, id, workload, workload_type, factors_json, params_json)
			VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, c := range cells {
			factors, err := encodeMap(c.Factors)
			if err != nil {
				return fmt.Errorf("cell %d factors: %w", c.ID, err)
			}
			params, err := encodeMap(c.Params)
			if err != nil {
				return fmt.Errorf("cell %d params: %w", c.ID, err)
			}
			if _, err := stmt.ExecContext(ctx, campaignID, c.ID, c.Workload, c.WorkloadType, factors, params); err != nil {
				return fmt.Errorf("cell %d: %w", c.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("adding cells to campaign %s: %w", campaignID, err)
	}
	return nil
}

// Cells returns a campaign's cells ordered by ID.
func (d *DB) Cells(ctx context.Context, campaignID string) ([]result.Cell, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, workload, workload_type, factors_json, params_json
		FROM cells WHERE campaign_id = ? ORDER BY id`, campaignID)
	if err != nil {
		return nil, fmt.Errorf("reading cells of campaign %s: %w", campaignID, err)
	}
	defer rows.Close()
	var out []result.Cell
	for rows.Next() {
		var (
			c               result.Cell
			factors, params string
		)
		if err := rows.Scan(&c.ID, &c.Workload, &c.WorkloadType, &factors, &params); err != nil {
			return nil, fmt.Errorf("reading cells of campaign %s: %w", campaignID, err)
		}
		if c.Factors, err = decodeMap(factors); err != nil {
			return nil, fmt.Errorf("reading cell %d factors: %w", c.ID, err)
		}
		// Campaigns stored before the neighbour had one name read in the
		// one vocabulary ("antagonist" is "neighbour").
		vocab.CanonicalFactors(c.Factors)
		if c.Params, err = decodeMap(params); err != nil {
			return nil, fmt.Errorf("reading cell %d params: %w", c.ID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading cells of campaign %s: %w", campaignID, err)
	}
	return out, nil
}
