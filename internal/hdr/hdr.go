// Package hdr is the one place that encodes, decodes and merges the HDR
// histograms workloads record, and reads a percentile of one in a
// metric's unit: a trial's percentile, its pairs' aggregate and a cell's
// pooled percentile are therefore the same computation on different sets
// of values.
package hdr

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Encode returns h in HdrHistogram's compressed V2 encoding, as bytes: the
// library wraps it in base64 text, a third larger, which a BLOB (or JSON,
// which base64-encodes bytes itself) does not need.
func Encode(h *hdrhistogram.Histogram) ([]byte, error) {
	text, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encoding a histogram: %w", err)
	}
	return base64.StdEncoding.DecodeString(string(text))
}

// Decode reads a histogram Encode wrote.
func Decode(data []byte) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(base64.StdEncoding.EncodeToString(data)))
	if err != nil {
		return nil, fmt.Errorf("decoding a histogram: %w", err)
	}
	return h, nil
}

// Merge returns one histogram holding every value of hs (at least one),
// ranged and as precise as the widest and most precise of them, so that
// nothing is dropped.
func Merge(hs ...*hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	if len(hs) == 0 {
		return nil, errors.New("merging no histograms")
	}
	lo, hi, digits := hs[0].LowestTrackableValue(), hs[0].HighestTrackableValue(), hs[0].SignificantFigures()
	for _, h := range hs[1:] {
		lo, hi, digits = min(lo, h.LowestTrackableValue()), max(hi, h.HighestTrackableValue()), max(digits, h.SignificantFigures())
	}
	out := hdrhistogram.New(lo, hi, int(digits))
	for _, h := range hs {
		if dropped := out.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("merging histograms dropped %d values", dropped)
		}
	}
	return out, nil
}

// Merged decodes recorded histograms of one distribution, all in one
// unit, and merges them; it returns the unit.
func Merged(hs []result.Histogram) (*hdrhistogram.Histogram, string, error) {
	decoded := make([]*hdrhistogram.Histogram, len(hs))
	for i, h := range hs {
		if h.Unit != hs[0].Unit {
			return nil, "", fmt.Errorf("histograms of %s in %s and %s", h.Metric, hs[0].Unit, h.Unit)
		}
		d, err := Decode(h.Data)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", h.Metric, err)
		}
		decoded[i] = d
	}
	m, err := Merge(decoded...)
	if err != nil {
		return nil, "", err
	}
	return m, hs[0].Unit, nil
}

// Percentile returns the value at percentile q (0–100) of h, whose values
// are in unit from, in unit to: HdrHistogram's value at that rank (the
// highest value equivalent to the recorded one at rank round(q/100·n)).
func Percentile(h *hdrhistogram.Histogram, q float64, from, to string) (float64, error) {
	return Convert(h.ValueAtQuantile(q), from, to)
}

// nanoseconds per unit of time.
var nanoseconds = map[string]float64{"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

// Convertible reports whether a value in unit from can be given in unit
// to: equal units, or two units of time.
func Convertible(from, to string) bool {
	_, f := nanoseconds[from]
	_, t := nanoseconds[to]
	return from == to || f && t
}

// Convert gives v, in unit from, in unit to. It divides by the ratio of
// the units (exact for powers of ten), so µs read as ms are v/1000 as a
// workload computing it by hand would get.
func Convert(v int64, from, to string) (float64, error) {
	if from == to {
		return float64(v), nil
	}
	f, okf := nanoseconds[from]
	t, okt := nanoseconds[to]
	switch {
	case !okf || !okt:
		return 0, fmt.Errorf("cannot give a value in %s in %s", from, to)
	case t >= f:
		return float64(v) / (t / f), nil
	}
	return float64(v) * (f / t), nil
}
