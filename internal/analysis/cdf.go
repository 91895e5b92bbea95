package analysis

import (
	"context"
	"fmt"
	"sort"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// CDF is one cell's distribution of every value its trials recorded in one
// histogram (round trips, requests, flows) — the union of its ok,
// non-warm-up trials' histograms — read at a fixed set of quantiles. It is
// what the HTML report draws as a CDF; the percentiles a Row shows are the
// mean of each trial's own.
type CDF struct {
	Workload     string
	WorkloadType string
	Histogram    string // which histogram (workload.Combine.Histogram), e.g. "latency"
	Role         string
	Unit         string // of Points' values: the unit of the metrics read from it
	Cell         map[string]string
	CellID       int
	Trials       int   // trials pooled
	Count        int64 // values pooled
	Points       []QuantilePoint
}

// QuantilePoint is the value at quantile Q (0–1) of a CDF.
type QuantilePoint struct {
	Q     float64
	Value float64
}

// cdfQuantiles are where a CDF is read: every percent up to the 99th,
// then the tail a latency study looks at.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for p := 0; p < 99; p++ {
		qs = append(qs, float64(p))
	}
	return append(qs, 99, 99.5, 99.9, 99.95, 99.99, 100)
}()

// LoadCDFs reads a campaign from src and pools each cell's histograms, one
// CDF per cell and histogram that a percentile metric of its workload is
// read from, in cell order. Cells whose trials stored no histogram have
// none.
func LoadCDFs(ctx context.Context, src Source, q Query) ([]CDF, error) {
	camp, err := src.Campaign(ctx, q.Campaign)
	if err != nil {
		return nil, err
	}
	cells, err := src.Cells(ctx, camp.ID)
	if err != nil {
		return nil, err
	}
	byCell, _, _, err := trialHistograms(ctx, src, camp.ID)
	if err != nil {
		return nil, err
	}
	var out []CDF
	for _, c := range cells {
		if len(byCell[c.ID]) == 0 {
			continue
		}
		done := map[histKey]bool{}
		for _, m := range workload.MetricsOf(c.WorkloadType, c.Params) {
			if m.Combine.How != workload.CombinePercentile {
				continue
			}
			keys := make([]histKey, 0, len(byCell[c.ID]))
			for k := range byCell[c.ID] {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool { return keys[i].role < keys[j].role })
			for _, k := range keys {
				hs := byCell[c.ID][k]
				if k.metric != m.Combine.Histogram || done[k] || len(hs) == 0 {
					continue
				}
				done[k] = true
				cdf, err := cdfOf(hs, m.Unit)
				if err != nil {
					return nil, fmt.Errorf("CDF of %s in cell %d: %w", k.metric, c.ID, err)
				}
				cdf.Workload, cdf.WorkloadType, cdf.Histogram, cdf.Role = c.Workload, c.WorkloadType, k.metric, k.role
				cdf.Cell, cdf.CellID = c.Factors, c.ID
				out = append(out, cdf)
			}
		}
	}
	return out, nil
}

// cdfOf merges hs and reads it at cdfQuantiles in unit.
func cdfOf(hs []result.Histogram, unit string) (CDF, error) {
	merged, from, err := hdr.Merged(hs)
	if err != nil {
		return CDF{}, err
	}
	if !hdr.Convertible(from, unit) {
		unit = from
	}
	c := CDF{Unit: unit, Trials: len(hs), Count: merged.TotalCount()}
	if c.Count == 0 {
		return c, nil
	}
	for _, q := range cdfQuantiles {
		var v float64
		if q == 0 {
			v, err = hdr.Convert(merged.Min(), from, unit)
		} else {
			v, err = hdr.Percentile(merged, q, from, unit)
		}
		if err != nil {
			return CDF{}, err
		}
		c.Points = append(c.Points, QuantilePoint{Q: q / 100, Value: v})
	}
	return c, nil
}
