package cli

import (
	"context"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
)

// results is a results database as the reports read it. A campaign stored
// before schema 6 has no recorded adaptive rule; its rule is read from the
// experiment text it stored, so its report is what it always was. The
// analysis packages never parse an experiment file themselves.
type results struct{ *store.DB }

// openResults opens the results database at path for reports.
func openResults(ctx context.Context, path string) (results, error) {
	db, err := store.Open(ctx, path)
	return results{db}, err
}

// Campaign returns the campaign with this ID (or unique prefix), with its
// adaptive rule.
func (r results) Campaign(ctx context.Context, id string) (result.Campaign, error) {
	c, err := r.DB.Campaign(ctx, id)
	if err == nil && c.Adaptive == nil {
		c.Adaptive = spec.AdaptiveOf(c.SpecText)
	}
	return c, err
}
