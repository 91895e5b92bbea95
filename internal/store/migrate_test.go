package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// A results file written by schema version 1 upgrades in place: its trials
// read back, and new trials carry flags and what the agents saw.
func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(migrations[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	d := openAt(t, path)
	ctx := context.Background()
	c := sampleCampaign("c1", base)
	if err := d.CreateCampaign(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := d.AddCells(ctx, "c1", sampleCells()); err != nil {
		t.Fatal(err)
	}
	tr := sampleTrial("c1", 1, 1)
	tr.Flags = "antagonists covered only 80% of the measured window (want 95%)"
	tr.Seen = map[string]string{"net.interfaces": "ctb0 198.18.1.2/24 mtu 1500"}
	if _, err := d.RecordTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	got, err := d.Trials(ctx, "c1")
	if err != nil || len(got) != 1 || got[0].Flags != tr.Flags || got[0].Seen["net.interfaces"] != tr.Seen["net.interfaces"] {
		t.Fatalf("trials %+v, %v", got, err)
	}
	if v, _ := userVersion(ctx, d.db); v != SchemaVersion {
		t.Errorf("user_version %d, want %d", v, SchemaVersion)
	}
}
