package analysis

import (
	"context"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// HistogramSource is a Source that also holds the histograms trials
// recorded, read apart from the trials because only pooling needs them:
// *store.DB. A Memory source's trials carry their own.
type HistogramSource interface {
	Source
	// Histograms returns the campaign's histograms by trial ID.
	Histograms(ctx context.Context, campaignID string) (map[int64][]result.Histogram, error)
}

// Pooled is a cell's percentile of every value its trials recorded — all
// requests (round trips, flows, events) of all its ok, non-warm-up,
// unflagged trials (a flagged trial is set apart here as everywhere else)
// — read from the union of their histograms (each trial's own, or its
// pairs' merged one). A Row of the same metric shows something else: the
// mean over trials of each trial's own percentile (TrialMean here).
type Pooled struct {
	Campaign     string            `json:"campaign"`
	Workload     string            `json:"workload"`
	WorkloadType string            `json:"workload_type"`
	Metric       string            `json:"metric"` // ID as reports print it
	ID           result.MetricID   `json:"-"`
	Unit         string            `json:"unit"`
	Better       result.Better     `json:"better"`
	Cell         map[string]string `json:"cell"`
	Trials       int               `json:"trials"`            // trials pooled
	Missing      int               `json:"missing"`           // ok trials without the histogram (stored by an older ctrbench): not pooled
	Flagged      int               `json:"flagged,omitempty"` // ok trials set apart as flagged (conditions not as planned): not pooled, as no other statistic uses them
	Values       int64             `json:"values"`            // values pooled
	Value        float64           `json:"pooled"`
	TrialMean    float64           `json:"trial_mean"` // the mean over the cell's trials of each one's percentile, as its Row
}

// histKey names a histogram of a trial: what it is of, and whose.
type histKey struct{ metric, role string }

// LoadPooled reads a campaign from src and pools, for each cell and each
// metric its workload reads as a percentile of a histogram, the
// histograms of the cell's ok, non-warm-up trials, in the order Rows
// orders rows. A metric no trial of a cell stored a histogram for is left
// out; none at all is an empty list.
func LoadPooled(ctx context.Context, src Source, q Query) (result.Campaign, []Pooled, error) {
	l, err := Load(ctx, src, q)
	if err != nil {
		return result.Campaign{}, nil, err
	}
	byCell, okTrials, flagged, err := trialHistograms(ctx, src, l.Campaign.ID)
	if err != nil {
		return l.Campaign, nil, err
	}
	var out []Pooled
	for _, s := range orderSeries(l.Series) {
		c, ok := percentileOf(s)
		if !ok {
			continue
		}
		hs := byCell[s.CellID][histKey{c.Histogram, s.ID.Role}]
		if len(hs) == 0 || len(s.Values) == 0 {
			continue
		}
		merged, unit, err := hdr.Merged(hs)
		if err != nil {
			return l.Campaign, nil, fmt.Errorf("pooling %s of cell %d: %w", s.ID, s.CellID, err)
		}
		v, err := hdr.Percentile(merged, c.Quantile, unit, s.Unit)
		if err != nil {
			return l.Campaign, nil, fmt.Errorf("pooling %s of cell %d: %w", s.ID, s.CellID, err)
		}
		out = append(out, Pooled{
			Campaign: s.Campaign, Workload: s.Workload, WorkloadType: s.WorkloadType,
			Metric: s.ID.String(), ID: s.ID, Unit: s.Unit, Better: s.Better, Cell: s.Cell,
			Trials: len(hs), Missing: okTrials[s.CellID] - len(hs), Flagged: flagged[s.CellID], Values: merged.TotalCount(),
			Value: v, TrialMean: stats.Summarize(s.Values).Mean,
		})
	}
	return l.Campaign, out, nil
}

// Poolable reports whether any ok trial of the campaign stored a histogram
// of the whole trial: whether LoadPooled has anything to pool.
func Poolable(ctx context.Context, src Source, campaignID string) (bool, error) {
	byCell, _, _, err := trialHistograms(ctx, src, campaignID)
	return len(byCell) > 0, err
}

// percentileOf returns how a series' metric is read from a histogram, if
// it is a trial's own percentile (one pair's, or the pairs' aggregate).
func percentileOf(s Series) (workload.Combine, bool) {
	if s.ID.Kind != result.KindMeasure || metricKey(s.ID).Scope != result.ScopeTrial {
		return workload.Combine{}, false
	}
	ws, ok := workload.Lookup(s.WorkloadType)
	if !ok {
		return workload.Combine{}, false
	}
	m, ok := ws.Metric(s.ID.Metric)
	return m.Combine, ok && m.Combine.How == workload.CombinePercentile
}

// trialHistograms returns the histograms that stand for a whole trial
// (scope trial, or the pairs' aggregate) of each ok, non-warm-up,
// unflagged trial, by cell and histogram, how many such trials each cell
// has, and how many flagged ones it set apart.
func trialHistograms(ctx context.Context, src Source, campaignID string) (map[int]map[histKey][]result.Histogram, map[int]int, map[int]int, error) {
	trials, err := src.Trials(ctx, campaignID)
	if err != nil {
		return nil, nil, nil, err
	}
	var stored map[int64][]result.Histogram
	if hsrc, ok := src.(HistogramSource); ok {
		if stored, err = hsrc.Histograms(ctx, campaignID); err != nil {
			return nil, nil, nil, err
		}
	}
	byCell, okTrials, flagged := map[int]map[histKey][]result.Histogram{}, map[int]int{}, map[int]int{}
	for _, t := range trials {
		if t.Warmup || t.Status != result.OK {
			continue
		}
		if t.Flags != "" {
			flagged[t.CellID]++
			continue
		}
		okTrials[t.CellID]++
		hs := t.Histograms
		if stored != nil {
			hs = stored[t.ID]
		}
		for _, h := range hs {
			if h.Scope != "" && h.Scope != result.ScopeTrial && h.Scope != result.ScopeAggregate {
				continue
			}
			if byCell[t.CellID] == nil {
				byCell[t.CellID] = map[histKey][]result.Histogram{}
			}
			k := histKey{h.Metric, h.Role}
			byCell[t.CellID][k] = append(byCell[t.CellID][k], h)
		}
	}
	return byCell, okTrials, flagged, nil
}
