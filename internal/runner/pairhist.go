package runner

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
)

// histKey names one of a pair's histograms: what it is of, and whose.
type histKey struct{ metric, role string }

// pairHistograms are the pairs' histograms decoded, the merged one of each
// that every pair recorded, and what the trial stores: the merged ones
// (scope aggregate), then each pair's (scope pair, its index).
type pairHistograms struct {
	perPair []map[histKey]*hdrhistogram.Histogram
	merged  map[histKey]*hdrhistogram.Histogram
	units   map[histKey]string
	stored  []result.Histogram
}

func mergePairs(hists [][]result.Histogram, cp copies) (*pairHistograms, error) {
	ph := &pairHistograms{perPair: make([]map[histKey]*hdrhistogram.Histogram, len(hists)),
		merged: map[histKey]*hdrhistogram.Histogram{}, units: map[histKey]string{}}
	var order []histKey
	var pairs []result.Histogram
	for p, hs := range hists {
		ph.perPair[p] = map[histKey]*hdrhistogram.Histogram{}
		for _, h := range hs {
			k := histKey{h.Metric, h.Role}
			if u, ok := ph.units[k]; !ok {
				ph.units[k] = h.Unit
				order = append(order, k)
			} else if u != h.Unit {
				return nil, fmt.Errorf("%s %d recorded %s in %s, another %s in %s", cp.noun, p+1, h.Metric, h.Unit, cp.noun, u)
			}
			d, err := hdr.Decode(h.Data)
			if err != nil {
				return nil, fmt.Errorf("%s %d's histogram of %s: %w", cp.noun, p+1, h.Metric, err)
			}
			ph.perPair[p][k] = d
			h.Scope, h.Index = cp.scope, p+1
			pairs = append(pairs, h)
		}
	}
	for _, k := range order {
		var all []*hdrhistogram.Histogram
		for _, hs := range ph.perPair {
			if h, ok := hs[k]; ok {
				all = append(all, h)
			}
		}
		if len(all) < len(hists) {
			continue // not every pair's: no distribution of the trial
		}
		m, err := hdr.Merge(all...)
		if err != nil {
			return nil, fmt.Errorf("the %ss' histograms of %s: %w", cp.noun, k.metric, err)
		}
		data, err := hdr.Encode(m)
		if err != nil {
			return nil, err
		}
		ph.merged[k] = m
		ph.stored = append(ph.stored, result.Histogram{Metric: k.metric, Scope: result.ScopeAggregate, Role: k.role, Unit: ph.units[k], Data: data})
	}
	ph.stored = append(ph.stored, pairs...)
	return ph, nil
}
