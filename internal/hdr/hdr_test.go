package hdr

import (
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ctrbench/ctrbench/internal/result"
)

func record(t *testing.T, h *hdrhistogram.Histogram, v, n int64) {
	t.Helper()
	if err := h.RecordValues(v, n); err != nil {
		t.Fatal(err)
	}
}

func TestEncodeDecode(t *testing.T) {
	h := hdrhistogram.New(1, 3_600_000_000, 3)
	record(t, h, 1234, 990)
	record(t, h, 98_765, 10)
	data, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equals(h) {
		t.Errorf("decoded histogram differs: %v vs %v", back.Distribution(), h.Distribution())
	}
	if _, err := Decode([]byte("not a histogram")); err == nil {
		t.Error("garbage decoded")
	}
}

// Two pairs: one fast (1000 values at 1 ms), one slow (1000 at 10 ms with
// 20 at 100 ms). The merged p99 is what 1% of all 2020 values exceed —
// 10 ms — not the mean of the pairs' p99s, (1 + 100)/2 = 50.5 ms.
func TestMergedPercentile(t *testing.T) {
	fast, slow := hdrhistogram.New(1, 60_000_000, 3), hdrhistogram.New(1, 120_000_000, 3)
	record(t, fast, 1000, 1000)
	record(t, slow, 10_000, 1000)
	record(t, slow, 100_000, 20)
	var hs []result.Histogram
	for _, h := range []*hdrhistogram.Histogram{fast, slow} {
		data, err := Encode(h)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, result.Histogram{Metric: "latency", Unit: "µs", Data: data})
	}
	m, unit, err := Merged(hs)
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalCount() != 2020 || unit != "µs" {
		t.Fatalf("merged %d values in %s", m.TotalCount(), unit)
	}
	for q, want := range map[float64]float64{25: 1, 99: 10, 99.9: 100} {
		got, err := Percentile(m, q, unit, "ms")
		if err != nil {
			t.Fatal(err)
		}
		if got < want || got > want*1.001 {
			t.Errorf("merged p%v = %v ms, want %v (within 0.1%%)", q, got, want)
		}
	}
	hs[1].Unit = "ns"
	if _, _, err := Merged(hs); err == nil {
		t.Error("histograms in different units merged")
	}
}

func TestConvert(t *testing.T) {
	for _, c := range []struct {
		v        int64
		from, to string
		want     float64
	}{
		{1500, "µs", "ms", 1.5}, {1500, "us", "µs", 1500}, {2_500_000, "ns", "ms", 2.5}, {3, "s", "ms", 3000}, {7, "count", "count", 7},
	} {
		got, err := Convert(c.v, c.from, c.to)
		if err != nil || got != c.want {
			t.Errorf("Convert(%d, %s, %s) = %v, %v; want %v", c.v, c.from, c.to, got, err, c.want)
		}
	}
	if Convertible("ns", "count") || !Convertible("ns", "µs") {
		t.Error("Convertible")
	}
	if _, err := Convert(1, "ns", "bytes"); err == nil {
		t.Error("ns converted to bytes")
	}
}
