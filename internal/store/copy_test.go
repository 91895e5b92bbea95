package store

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// fullTrial is a trial with every field set: failed after attempts,
// flagged, seen, raw output, observations of every identity, histograms.
func fullTrial(campaignID string, seq, cell int) result.Trial {
	t := sampleTrial(campaignID, seq, cell)
	t.Warmup = seq%5 == 0
	t.Raw = "raw output of " + campaignID + "\nline 2"
	t.Seen = map[string]string{"eth0.mtu": "1500", "server.cpus": "2"}
	if seq%3 == 0 {
		t.Status, t.Error, t.FailedBy = result.Failed, "connection refused", result.FailedByPlatform
		t.Attempts = []result.Attempt{{Started: base, Ended: base.Add(time.Second), Status: result.Failed, Error: "engine gone", FailedBy: result.FailedByPlatform}}
	} else if seq%4 == 0 {
		t.Flags = "neighbours covered 80% of the window"
	}
	t.Observations = append(t.Observations,
		result.Observation{Metric: "throughput", Scope: result.ScopePair, Index: 2, Value: 7, Unit: "Mbit/s", Better: result.Higher},
		result.Observation{Metric: "cpu_seconds", Kind: result.KindTelemetry, Role: "server", Value: 0.25, Unit: "s", Better: result.Lower},
		result.Observation{Metric: "throughput", Scope: result.ScopeNeighbour, Index: 1, Value: 3, Unit: "Mbit/s", Better: result.Higher})
	t.Histograms = []result.Histogram{
		{Metric: "latency", Unit: "us", Data: []byte{1, 2, 3, byte(seq)}},
		{Metric: "latency", Scope: result.ScopePair, Role: "client", Index: 1, Unit: "ns", Data: []byte{9, byte(seq)}},
	}
	return t
}

// copySource stores three campaigns whose trials interleave, so their
// trial IDs do too: a, done, with everything set; b, its calibration; c,
// which is not copied.
func copySource(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	src, _ := openTest(t)
	for i, id := range []string{"a", "b", "c"} {
		c := sampleCampaign(id, base.Add(time.Duration(i)*time.Hour))
		switch id {
		case "a":
			c.Status, c.Ended, c.Owner = result.CampaignDone, base.Add(3*time.Hour), "123 456"
			c.Adaptive = &result.Adaptive{Min: 3, Max: 9, RCI: 0.02, Metric: "throughput"}
			c.SpecText += "\n# ctrbench: --set overrides, as given on the command line:\n# --set repetitions=3\n"
		case "b":
			c.Kind, c.Status, c.Baseline = result.KindCalibration, result.CampaignInterrupted, nil
		}
		if err := src.CreateCampaign(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := src.AddCells(ctx, id, sampleCells()); err != nil {
			t.Fatal(err)
		}
	}
	for seq := 1; seq <= 12; seq++ {
		for _, id := range []string{"c", "b", "a"} {
			if id == "b" && seq > 6 {
				continue
			}
			record(t, src, fullTrial(id, seq, 1+seq%2))
		}
	}
	return src
}

// A copy reads back as the original, field for field: the campaigns'
// rows, cells, trials (IDs, order, observations, seen, attempts, flags)
// and histograms, and nothing of the campaign left behind.
func TestCopyCampaignsRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := copySource(t)
	dst, _ := openTest(t)
	if err := src.CopyCampaigns(ctx, dst, "a", "b", "a"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		sameCampaign(t, src, dst, id)
	}
	cs, err := dst.Campaigns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Errorf("the copy holds %d campaigns, want a and b", len(cs))
	}
	if _, err := dst.Campaign(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("campaign c, not copied: %v", err)
	}
	if got, want := count(t, dst, "trials"), 12+6; got != want {
		t.Errorf("%d trials in the copy, want %d", got, want)
	}
	if err := dst.Check(ctx); err != nil {
		t.Error(err)
	}
}

// sameCampaign compares everything the store reads back of campaign id.
func sameCampaign(t *testing.T, src, dst *DB, id string) {
	t.Helper()
	ctx := context.Background()
	type read func(*DB) (any, error)
	reads := map[string]read{
		"campaign":   func(d *DB) (any, error) { return d.Campaign(ctx, id) },
		"cells":      func(d *DB) (any, error) { return d.Cells(ctx, id) },
		"trials":     func(d *DB) (any, error) { return d.Trials(ctx, id) },
		"histograms": func(d *DB) (any, error) { return d.Histograms(ctx, id) },
	}
	for what, r := range reads {
		want, err := r(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("campaign %s's %s differ in the copy:\n got %+v\nwant %+v", id, what, got, want)
		}
	}
	ts, _ := dst.Trials(ctx, id)
	hs, _ := dst.Histograms(ctx, id)
	if len(ts) == 0 || len(hs) != len(ts) || ts[0].ID < 2 {
		t.Errorf("campaign %s: %d trials, %d with histograms, first ID %v: the fixture does not exercise the copy", id, len(ts), len(hs), ts)
	}
}

// A destination that already holds later trials would renumber the
// copy's: refused before anything is recorded.
func TestCopyCampaignsRefusesTakenIDs(t *testing.T) {
	ctx := context.Background()
	src := copySource(t)
	dst, _ := openTest(t)
	setup(t, dst, "other")
	for seq := 1; seq <= 40; seq++ {
		record(t, dst, sampleTrial("other", seq, 1))
	}
	err := src.CopyCampaigns(ctx, dst, "a")
	if err == nil || !strings.Contains(err.Error(), "already holds trial 40") {
		t.Fatalf("copy into a database with trials up to 40: %v", err)
	}
	if n := count(t, dst, "trials"); n != 40 {
		t.Errorf("%d trials after the refused copy, want 40", n)
	}
}

// An ID that names no campaign is ErrNotFound, as everywhere in the store.
func TestCopyCampaignsUnknown(t *testing.T) {
	src := copySource(t)
	dst, _ := openTest(t)
	if err := src.CopyCampaigns(context.Background(), dst, "zz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("copy of an unknown campaign: %v", err)
	}
}
