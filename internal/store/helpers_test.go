package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// openTest opens a fresh database in a temp dir and closes it at cleanup.
func openTest(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.db")
	return openAt(t, path), path
}

func openAt(t *testing.T, path string) *DB {
	t.Helper()
	d, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// base is a fixed instant with a non-zero nanosecond part and a non-UTC
// zone, so round trips exercise both.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 5*3600+1800))

func sampleCampaign(id string, started time.Time) result.Campaign {
	return result.Campaign{
		ID:       id,
		Name:     "net-" + id,
		SpecPath: "/specs/" + id + ".yaml",
		SpecText: "name: x\nworkloads: []\n",
		Seed:     -42,
		Started:  started,
		Status:   "running",
		Env:      map[string]string{"kernel": "6.8", "docker": "28.5"},
		Baseline: map[string]string{"platform": "native"},
	}
}

func sampleCells() []result.Cell {
	return []result.Cell{
		{ID: 1, Workload: "tcp", WorkloadType: "net.tcp_stream",
			Factors: map[string]string{"platform": "native", "cpus": "1"},
			Params:  map[string]string{"duration": "10s"}},
		{ID: 2, Workload: "tcp", WorkloadType: "net.tcp_stream",
			Factors: map[string]string{"platform": "docker", "cpus": "1"},
			Params:  map[string]string{}},
	}
}

func sampleTrial(campaignID string, seq, cell int) result.Trial {
	started := base.Add(time.Duration(seq) * time.Minute)
	return result.Trial{
		CampaignID: campaignID,
		CellID:     cell,
		Seq:        seq,
		Repetition: seq,
		Status:     result.OK,
		Started:    started,
		Ended:      started.Add(1500 * time.Millisecond),
		Observations: []result.Observation{
			{Metric: "throughput", Value: float64(seq) * 1.5, Unit: "Mbit/s", Better: result.Higher},
			{Metric: "latency_p99", Value: 0.001, Unit: "s", Better: result.Lower},
		},
	}
}

// setup creates a campaign with the sample cells.
func setup(t *testing.T, d *DB, id string) {
	t.Helper()
	ctx := context.Background()
	if err := d.CreateCampaign(ctx, sampleCampaign(id, base)); err != nil {
		t.Fatal(err)
	}
	if err := d.AddCells(ctx, id, sampleCells()); err != nil {
		t.Fatal(err)
	}
}

func record(t *testing.T, d *DB, tr result.Trial) int64 {
	t.Helper()
	id, err := d.RecordTrial(context.Background(), tr)
	if err != nil {
		t.Fatalf("RecordTrial(seq %d): %v", tr.Seq, err)
	}
	return id
}

func count(t *testing.T, d *DB, table string) int {
	t.Helper()
	var n int
	if err := d.db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s", table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
