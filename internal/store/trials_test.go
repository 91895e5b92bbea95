package store

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

func TestTrialRoundTrip(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	setup(t, d, "c")
	setup(t, d, "other")

	full := sampleTrial("c", 2, 1)
	full.Warmup = true
	full.Error = "partial"
	full.Raw = "line1\nline2\n"
	many := sampleTrial("c", 3, 2)
	many.Observations = nil
	for _, m := range []string{"z", "a", "m", "b"} { // not alphabetical
		many.Observations = append(many.Observations,
			result.Observation{Metric: m, Value: -0.25, Unit: "x", Better: result.Lower})
	}
	failed := result.Trial{CampaignID: "c", CellID: 2, Seq: 1, Repetition: 1,
		Status: result.Failed, Error: "boom"} // zero times, no observations
	extreme := sampleTrial("c", 4, 1)
	extreme.Observations = []result.Observation{
		{Metric: "max", Value: math.MaxFloat64}, {Metric: "tiny", Value: math.SmallestNonzeroFloat64},
		{Metric: "negzero", Value: math.Copysign(0, -1)},
	}

	want := []result.Trial{failed, full, many, extreme} // by seq
	// Record in a different order from seq; another campaign interleaves.
	for _, tr := range []result.Trial{full, extreme, failed, many} {
		id := record(t, d, tr)
		for i := range want {
			if want[i].Seq == tr.Seq {
				want[i].ID = id
			}
		}
		record(t, d, sampleTrial("other", tr.Seq, 1))
	}

	got, err := d.Trials(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d trials, want %d", len(got), len(want))
	}
	for i := range want {
		assertTrial(t, got[i], want[i])
	}
	if got, err := d.Trials(ctx, "none"); err != nil || len(got) != 0 {
		t.Errorf("Trials(none) = %v, %v", got, err)
	}
}

func assertTrial(t *testing.T, got, want result.Trial) {
	t.Helper()
	if !got.Started.Equal(want.Started) || !got.Ended.Equal(want.Ended) {
		t.Errorf("trial %d times = %v..%v, want %v..%v", want.Seq, got.Started, got.Ended, want.Started, want.Ended)
	}
	got.Started, got.Ended, want.Started, want.Ended = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	// Observations read back with their identity's defaults filled in.
	want.Observations = slices.Clone(want.Observations)
	for i, o := range want.Observations {
		id := o.ID()
		want.Observations[i].Scope, want.Observations[i].Kind = id.Scope, id.Kind
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trial = %#v\nwant %#v", got, want)
	}
}

func TestRecordTrialRejectsNonFinite(t *testing.T) {
	d, _ := openTest(t)
	setup(t, d, "c")
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		tr := sampleTrial("c", 1, 1)
		// The bad value comes last: nothing earlier may be stored either.
		tr.Observations = append(tr.Observations, result.Observation{Metric: "bad", Value: v})
		_, err := d.RecordTrial(context.Background(), tr)
		if err == nil || !strings.Contains(err.Error(), `"bad"`) {
			t.Errorf("RecordTrial with %v: err = %v, want error naming the metric", v, err)
		}
	}
	if n := count(t, d, "trials"); n != 0 {
		t.Errorf("%d trials stored, want 0", n)
	}
}

// Every shape of identity a producer writes reads back with the same ID,
// in insertion order, with the bare name in Metric.
func TestObservationIdentityRoundTrip(t *testing.T) {
	d, _ := openTest(t)
	setup(t, d, "c")
	tr := sampleTrial("c", 1, 1)
	tr.Observations = []result.Observation{
		{Metric: "throughput", Value: 1},
		{Metric: "throughput", Role: "server", Value: 2},
		{Metric: "throughput", Scope: result.ScopePair, Index: 3, Value: 3},
		{Metric: "cpu_seconds", Scope: result.ScopePair, Index: 12, Role: "server", Kind: result.KindTelemetry, Value: 4},
		{Metric: "throughput", Scope: result.ScopeAggregate, Value: 5},
		{Metric: "jain", Scope: result.ScopeAggregate, Kind: result.KindPairs, Value: 6},
		{Metric: "cpu_seconds", Kind: result.KindTelemetry, Value: 7},
		{Metric: "overlap_pct", Scope: result.ScopeNeighbour, Value: 8},
		{Metric: "cpu_seconds", Scope: result.ScopeNeighbour, Index: 2, Kind: result.KindTelemetry, Value: 9},
	}
	record(t, d, tr)
	got, err := d.Trials(context.Background(), "c")
	if err != nil || len(got) != 1 || len(got[0].Observations) != len(tr.Observations) {
		t.Fatalf("Trials = %+v, %v", got, err)
	}
	for i, o := range got[0].Observations {
		w := tr.Observations[i]
		if o.ID() != w.ID() || o.Value != w.Value || o.Metric != w.Metric {
			t.Errorf("observation %d = %+v, want %+v", i, o, w)
		}
	}
	var stored []string
	rows, err := d.db.Query(`SELECT metric || '|' || scope || '|' || kind || '|' || role || '|' || idx FROM observations ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, s)
	}
	if want := "cpu_seconds|pair|telemetry|server|12"; stored[3] != want {
		t.Errorf("stored %q, want %q", stored[3], want)
	}
	if want := "throughput|trial|measure||0"; stored[0] != want {
		t.Errorf("stored %q, want %q", stored[0], want)
	}
}

// A writer still putting whose value it is into the name is a bug: the
// trial is refused whole.
func TestRecordTrialRejectsPrefixedNames(t *testing.T) {
	d, _ := openTest(t)
	setup(t, d, "c")
	tr := sampleTrial("c", 1, 1)
	tr.Observations = append(tr.Observations, result.Observation{Metric: "server.throughput", Value: 1})
	_, err := d.RecordTrial(context.Background(), tr)
	if err == nil || !strings.Contains(err.Error(), `"server.throughput"`) || !strings.Contains(err.Error(), "no dots") {
		t.Errorf("err = %v, want one naming the metric and why", err)
	}
	if n := count(t, d, "trials"); n != 0 {
		t.Errorf("%d trials stored, want 0", n)
	}
}

func TestRecordTrialErrors(t *testing.T) {
	tests := []struct {
		name  string
		trial result.Trial
	}{
		{"unknown cell", sampleTrial("c", 5, 99)},
		{"unknown campaign", sampleTrial("nope", 5, 1)},
		{"duplicate seq", sampleTrial("c", 1, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t)
			setup(t, d, "c")
			record(t, d, sampleTrial("c", 1, 1))
			if _, err := d.RecordTrial(context.Background(), tt.trial); err == nil {
				t.Fatal("RecordTrial succeeded, want error")
			}
			// The failed transaction left nothing behind.
			if n := count(t, d, "trials"); n != 1 {
				t.Errorf("%d trials, want 1", n)
			}
			if n := count(t, d, "observations"); n != 2 {
				t.Errorf("%d observations, want 2", n)
			}
		})
	}
}

// TestCascade deletes a campaign with raw SQL (there is no API for it yet)
// and checks that its cells, trials and observations go with it and that
// other campaigns are untouched.
func TestCascade(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	setup(t, d, "gone")
	setup(t, d, "kept")
	for seq := 1; seq <= 3; seq++ {
		record(t, d, sampleTrial("gone", seq, 1))
		record(t, d, sampleTrial("kept", seq, 2))
	}
	if _, err := d.db.ExecContext(ctx, `DELETE FROM campaigns WHERE id = 'gone'`); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{"campaigns": 1, "cells": 2, "trials": 3, "observations": 6} {
		if n := count(t, d, table); n != want {
			t.Errorf("%s: %d rows, want %d", table, n, want)
		}
	}
	trials, err := d.Trials(ctx, "kept")
	if err != nil || len(trials) != 3 || len(trials[2].Observations) != 2 {
		t.Errorf("kept campaign damaged: %v, %v", trials, err)
	}
	// Deleting a cell with trials cascades too.
	if _, err := d.db.ExecContext(ctx, `DELETE FROM cells WHERE campaign_id = 'kept' AND id = 2`); err != nil {
		t.Fatal(err)
	}
	if n := count(t, d, "observations"); n != 0 {
		t.Errorf("%d observations after deleting their cell, want 0", n)
	}
}

// Schema 5: what failed a trial, its earlier attempts and its histograms
// come back as they were written; a campaign keeps its kind and owner.
func TestTrialAttemptsAndHistograms(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	c := sampleCampaign("k", base)
	c.Kind, c.Owner = result.KindCalibration, "4242 123456"
	if err := d.CreateCampaign(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := d.AddCells(ctx, "k", sampleCells()); err != nil {
		t.Fatal(err)
	}
	tr := sampleTrial("k", 1, 1)
	tr.Attempts = []result.Attempt{{Started: base.UTC(), Ended: base.Add(time.Second).UTC(), Status: result.Failed, Error: "cannot connect to the Docker daemon", FailedBy: result.FailedByPlatform}}
	tr.Histograms = []result.Histogram{{Metric: "latency", Unit: "us", Data: []byte{1, 2, 3}}, {Metric: "latency", Role: "server", Scope: result.ScopePair, Index: 2, Unit: "ns", Data: []byte{9}}}
	id := record(t, d, tr)
	bad := sampleTrial("k", 2, 2)
	bad.Status, bad.Error, bad.FailedBy = result.Failed, "wrong", result.FailedByWorkload
	record(t, d, bad)
	got, err := d.Trials(ctx, "k")
	if err != nil || len(got) != 2 {
		t.Fatal(got, err)
	}
	if !reflect.DeepEqual(got[0].Attempts, tr.Attempts) || got[0].FailedBy != "" || got[1].FailedBy != result.FailedByWorkload {
		t.Errorf("attempts %+v, failed by %q and %q", got[0].Attempts, got[0].FailedBy, got[1].FailedBy)
	}
	hs, err := d.Histograms(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	want := tr.Histograms
	want[0].Scope = result.ScopeTrial
	if !reflect.DeepEqual(hs[id], want) || len(hs) != 1 {
		t.Errorf("histograms %+v, want %+v", hs, want)
	}
	back, err := d.Campaign(ctx, "k")
	if err != nil || back.Kind != result.KindCalibration || back.Owner != c.Owner {
		t.Errorf("campaign %+v %v", back, err)
	}
}
