package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// legacyFile writes a results file as the given schema version left it,
// with one campaign, cell 1 and the trials given as their observations'
// legacy names (values 1, 2, 3… in order), and returns its path.
func legacyFile(t *testing.T, version int, trials ...[]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, m := range migrations[:version] {
		if m.data != nil {
			t.Fatalf("schema step before %d has a data step: build the file another way", version)
		}
		mustExec(t, raw, m.sql)
	}
	mustExec(t, raw, `INSERT INTO campaigns (id, name, spec_path, spec_text, seed, status, env_json, baseline_json)
		VALUES ('c1', 'old', 'old.yaml', '', 1, 'done', '{}', '{}')`)
	mustExec(t, raw, `INSERT INTO cells (campaign_id, id, workload, workload_type, factors_json, params_json)
		VALUES ('c1', 1, 'tcp', 'net.tcp_stream', '{}', '{}')`)
	v := 0.0
	for i, names := range trials {
		mustExec(t, raw, `INSERT INTO trials (id, campaign_id, cell_id, seq, repetition, warmup, status, error, raw)
			VALUES (?, 'c1', 1, ?, 1, 0, 'ok', '', '')`, i+1, i+1)
		for _, n := range names {
			v++
			mustExec(t, raw, `INSERT INTO observations (trial_id, metric, value, unit, better)
				VALUES (?, ?, ?, 'x', 'higher')`, i+1, n, v)
		}
	}
	mustExec(t, raw, fmt.Sprintf("PRAGMA user_version = %d", version))
	return path
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A results file written by schema version 1 upgrades in place: its trials
// read back, and new trials carry flags and what the agents saw.
func TestUpgradeFromVersion1(t *testing.T) {
	path := legacyFile(t, 1, []string{"throughput", "server.telemetry.cpu_seconds"})
	d := openAt(t, path)
	ctx := context.Background()
	got, err := d.Trials(ctx, "c1")
	if err != nil || len(got) != 1 {
		t.Fatalf("trials %+v, %v", got, err)
	}
	want := []result.MetricID{
		{Metric: "throughput", Scope: result.ScopeTrial, Kind: result.KindMeasure},
		{Metric: "cpu_seconds", Scope: result.ScopeTrial, Kind: result.KindTelemetry, Role: "server"},
	}
	assertIDs(t, got[0], want)

	if err := d.AddCells(ctx, "c1", []result.Cell{{ID: 2, Workload: "tcp", WorkloadType: "net.tcp_stream"}}); err != nil {
		t.Fatal(err)
	}
	tr := sampleTrial("c1", 2, 2)
	tr.Flags = "antagonists covered only 80% of the measured window (want 95%)"
	tr.Seen = map[string]string{"net.interfaces": "ctb0 198.18.1.2/24 mtu 1500"}
	if _, err := d.RecordTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	got, err = d.Trials(ctx, "c1")
	if err != nil || len(got) != 2 || got[1].Flags != tr.Flags || got[1].Seen["net.interfaces"] != tr.Seen["net.interfaces"] {
		t.Fatalf("trials %+v, %v", got, err)
	}
	if v, _ := userVersion(ctx, d.db); v != SchemaVersion {
		t.Errorf("user_version %d, want %d", v, SchemaVersion)
	}
}

// A version 3 file's legacy names of every shape become identities: a
// trial with pairs has its unqualified names as the pairs' aggregate, a
// trial without has them as its own.
func TestUpgradeFromVersion3(t *testing.T) {
	pairs := []string{
		"throughput", "pair3.server.telemetry.x", "pair1.throughput", "pairs.jain",
		"server.telemetry.cpu_seconds",
	}
	coloc := []string{
		"throughput", "server.throughput", "telemetry.cpu_seconds", "antagonist.overlap_pct",
		"antagonist.telemetry.cpu_seconds", "antagonist2.telemetry.cpu_seconds",
	}
	d := openAt(t, legacyFile(t, 3, pairs, coloc))
	got, err := d.Trials(context.Background(), "c1")
	if err != nil || len(got) != 2 {
		t.Fatalf("trials %+v, %v", got, err)
	}
	assertIDs(t, got[0], []result.MetricID{
		{Metric: "throughput", Scope: result.ScopeAggregate, Kind: result.KindMeasure},
		{Metric: "x", Scope: result.ScopePair, Kind: result.KindTelemetry, Role: "server", Index: 3},
		{Metric: "throughput", Scope: result.ScopePair, Kind: result.KindMeasure, Index: 1},
		{Metric: "jain", Scope: result.ScopeAggregate, Kind: result.KindPairs},
		{Metric: "cpu_seconds", Scope: result.ScopeAggregate, Kind: result.KindTelemetry, Role: "server"},
	})
	assertIDs(t, got[1], []result.MetricID{
		{Metric: "throughput", Scope: result.ScopeTrial, Kind: result.KindMeasure},
		{Metric: "throughput", Scope: result.ScopeTrial, Kind: result.KindMeasure, Role: "server"},
		{Metric: "cpu_seconds", Scope: result.ScopeTrial, Kind: result.KindTelemetry},
		{Metric: "overlap_pct", Scope: result.ScopeNeighbour, Kind: result.KindMeasure},
		{Metric: "cpu_seconds", Scope: result.ScopeNeighbour, Kind: result.KindTelemetry, Index: 1},
		{Metric: "cpu_seconds", Scope: result.ScopeNeighbour, Kind: result.KindTelemetry, Index: 2},
	})
	// Values stay with their observations, in insertion order.
	for i, o := range append(got[0].Observations, got[1].Observations...) {
		if o.Value != float64(i+1) || o.Unit != "x" || o.Better != result.Higher {
			t.Errorf("observation %d: %+v", i, o)
		}
	}
	for i, names := range [][]string{pairs, coloc} {
		for j, o := range got[i].Observations {
			// antagonist was the old word for a neighbour.
			if s, want := o.ID().String(), strings.Replace(names[j], "antagonist", "neighbour", 1); s != want {
				t.Errorf("trial %d: %q prints as %q, want %q", i+1, names[j], s, want)
			}
		}
	}
}

// assertIDs checks a trial's observations' identities, in order, and that
// the stored name is bare.
func assertIDs(t *testing.T, tr result.Trial, want []result.MetricID) {
	t.Helper()
	if len(tr.Observations) != len(want) {
		t.Fatalf("trial %d has %d observations, want %d", tr.Seq, len(tr.Observations), len(want))
	}
	for i, o := range tr.Observations {
		if o.ID() != want[i] {
			t.Errorf("trial %d observation %d: %+v, want %+v", tr.Seq, i, o.ID(), want[i])
		}
		if o.Scope == "" || o.Kind == "" {
			t.Errorf("trial %d observation %d: scope and kind not filled: %+v", tr.Seq, i, o)
		}
	}
}

// The real version 3 file behind the CLI's golden reports (two campaigns:
// co-location, and pairs with three roles) upgrades in place: every name
// it stored reads back as an identity that prints that name, in the same
// order, and none is left with a prefix.
func TestUpgradeStoredVersion3(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "cli", "testdata", "stored", "v3.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v3.db")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	legacy := map[int64][]string{} // trial ID -> names, in insertion order
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Query(`SELECT trial_id, metric FROM observations ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		legacy[id] = append(legacy[id], name)
		n++
	}
	rows.Close()
	raw.Close()
	if n < 1000 {
		t.Fatalf("the v3 file has %d observations; is it the real one?", n)
	}

	d := openAt(t, path)
	ctx := context.Background()
	cs, err := d.Campaigns(ctx)
	if err != nil || len(cs) != 2 {
		t.Fatalf("campaigns %v, %v", cs, err)
	}
	seen := map[string]map[result.MetricID]bool{} // campaign name and legacy name -> identities
	read := 0
	for _, c := range cs {
		trials, err := d.Trials(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trials {
			names := legacy[tr.ID]
			if len(names) != len(tr.Observations) {
				t.Fatalf("trial %d: %d observations, want %d", tr.ID, len(tr.Observations), len(names))
			}
			for i, o := range tr.Observations {
				read++
				// The neighbours were called antagonists when this file
				// was written; they read back under the one word.
				if want := strings.Replace(names[i], "antagonist", "neighbour", 1); o.ID().String() != want {
					t.Errorf("trial %d: %q reads back as %q, want %q", tr.ID, names[i], o.ID(), want)
				}
				if o.Metric == "" || strings.Contains(o.Metric, ".") {
					t.Errorf("trial %d: metric %q is not a bare name", tr.ID, o.Metric)
				}
				k := c.Name + " " + names[i]
				if seen[k] == nil {
					seen[k] = map[result.MetricID]bool{}
				}
				seen[k][o.ID()] = true
			}
		}
	}
	if read != n {
		t.Errorf("read %d observations, the file has %d", read, n)
	}
	measure := func(m string, s result.Scope) result.MetricID {
		return result.MetricID{Metric: m, Scope: s, Kind: result.KindMeasure}
	}
	for name, want := range map[string][]result.MetricID{
		// pairs 1 and 3 in one workload: the trial's own, and the pairs' aggregate.
		"golden-pairs throughput":                         {measure("throughput", result.ScopeTrial), measure("throughput", result.ScopeAggregate)},
		"golden-pairs pair2.server.telemetry.cpu_seconds": {{Metric: "cpu_seconds", Scope: result.ScopePair, Kind: result.KindTelemetry, Role: "server", Index: 2}},
		"golden-pairs pairs.max_min_ratio":                {{Metric: "max_min_ratio", Scope: result.ScopeAggregate, Kind: result.KindPairs}},
		"golden-pairs pong.telemetry.tcp_out_segs":        {{Metric: "tcp_out_segs", Scope: result.ScopeTrial, Kind: result.KindTelemetry, Role: "pong"}},
		"golden-pairs requests_per_sec":                   {measure("requests_per_sec", result.ScopeTrial)},
		"golden-coloc events_per_sec":                     {measure("events_per_sec", result.ScopeTrial)},
		"golden-coloc antagonist.overlap_pct":             {measure("overlap_pct", result.ScopeNeighbour)},
		"golden-coloc antagonist.telemetry.cpu_seconds":   {{Metric: "cpu_seconds", Scope: result.ScopeNeighbour, Kind: result.KindTelemetry, Index: 1}},
	} {
		got := seen[name]
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
			continue
		}
		for _, id := range want {
			if !got[id] {
				t.Errorf("%s: %v, want %v", name, got, want)
			}
		}
	}
}
