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

func TestCampaignRoundTrip(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		c    result.Campaign
	}{
		{"full", sampleCampaign("c1", base)},
		{"nil maps and zero times", result.Campaign{ID: "c2", Status: "running"}},
		{"empty maps", result.Campaign{ID: "c3", Env: map[string]string{}, Baseline: map[string]string{},
			Started: base, Ended: base.Add(time.Hour), Status: "done"}},
		{"odd text", result.Campaign{ID: "c4", Name: "ünïcode 'quote' \"dq\"", SpecText: "a\x00b\n",
			Env: map[string]string{"": "empty key", "k": ""}}},
		{"adaptive rule", result.Campaign{ID: "c5", Status: "done",
			Adaptive: &result.Adaptive{Min: 3, Max: 30, RCI: 0.02, Metric: "ops_per_s"}}},
	}
	d, _ := openTest(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := d.CreateCampaign(ctx, tt.c); err != nil {
				t.Fatal(err)
			}
			got, err := d.Campaign(ctx, tt.c.ID)
			if err != nil {
				t.Fatal(err)
			}
			assertCampaign(t, got, tt.c)
		})
	}
}

// assertCampaign compares with times by instant and requires UTC on read.
func assertCampaign(t *testing.T, got, want result.Campaign) {
	t.Helper()
	if !got.Started.Equal(want.Started) || !got.Ended.Equal(want.Ended) {
		t.Errorf("times = %v..%v, want %v..%v", got.Started, got.Ended, want.Started, want.Ended)
	}
	for _, tm := range []time.Time{got.Started, got.Ended} {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("time %v not in UTC", tm)
		}
	}
	got.Started, got.Ended, want.Started, want.Ended = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("campaign = %#v\nwant %#v", got, want)
	}
}

func TestCreateCampaignDuplicate(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	if err := d.CreateCampaign(ctx, sampleCampaign("dup", base)); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateCampaign(ctx, sampleCampaign("dup", base)); err == nil {
		t.Fatal("second CreateCampaign with same ID succeeded")
	}
	if err := d.CreateCampaign(ctx, result.Campaign{}); err == nil {
		t.Fatal("CreateCampaign with empty ID succeeded")
	}
}

func TestFinishCampaign(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	c := sampleCampaign("fin", base)
	if err := d.CreateCampaign(ctx, c); err != nil {
		t.Fatal(err)
	}
	ended := base.Add(90*time.Minute + 7)
	if err := d.FinishCampaign(ctx, "fin", "interrupted", ended); err != nil {
		t.Fatal(err)
	}
	got, err := d.Campaign(ctx, "fin")
	if err != nil {
		t.Fatal(err)
	}
	c.Status, c.Ended = "interrupted", ended
	assertCampaign(t, got, c)

	if err := d.FinishCampaign(ctx, "nope", "done", ended); !errors.Is(err, ErrNotFound) {
		t.Errorf("FinishCampaign(missing) = %v, want ErrNotFound", err)
	}
}

func TestSetCampaignEnv(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	if err := d.CreateCampaign(ctx, sampleCampaign("env", base)); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateCampaign(ctx, result.Campaign{ID: "nilenv"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   string
		set  map[string]string
		want map[string]string
	}{
		{"env", map[string]string{"docker": "29.0", "image": "sha256:ab"},
			map[string]string{"kernel": "6.8", "docker": "29.0", "image": "sha256:ab"}},
		{"env", nil, map[string]string{"kernel": "6.8", "docker": "29.0", "image": "sha256:ab"}},
		{"nilenv", map[string]string{"a": "b"}, map[string]string{"a": "b"}},
	}
	for _, tt := range tests {
		if err := d.SetCampaignEnv(ctx, tt.id, tt.set); err != nil {
			t.Fatal(err)
		}
		got, err := d.Campaign(ctx, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Env, tt.want) {
			t.Errorf("%s: env = %v, want %v", tt.id, got.Env, tt.want)
		}
	}
	if err := d.SetCampaignEnv(ctx, "missing", map[string]string{"a": "b"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetCampaignEnv(missing) = %v, want ErrNotFound", err)
	}
}

func TestCampaignPrefix(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"20250314-abc", "20250314-abd", "20250315-x", "a_b", "axb", "Upper"} {
		if err := d.CreateCampaign(ctx, sampleCampaign(id, base)); err != nil {
			t.Fatal(err)
		}
	}
	// An ID that is also a prefix of another: exact match must win.
	for _, id := range []string{"exact", "exact-longer"} {
		if err := d.CreateCampaign(ctx, sampleCampaign(id, base)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		query   string
		want    string // ID found, if any
		wantErr error
		matches []string // named in an ambiguity error
	}{
		{query: "20250314-abc", want: "20250314-abc"},
		{query: "20250315", want: "20250315-x"},
		{query: "20250314-abd", want: "20250314-abd"},
		{query: "exact", want: "exact"},
		{query: "exact-", want: "exact-longer"},
		{query: "20250314-ab", wantErr: ErrAmbiguous, matches: []string{"20250314-abc", "20250314-abd"}},
		{query: "2025", wantErr: ErrAmbiguous, matches: []string{"20250314-abc", "20250314-abd", "20250315-x"}},
		{query: "a_", want: "a_b"},             // '_' is not a wildcard
		{query: "a%", wantErr: ErrNotFound},    // nor is '%'
		{query: "upper", wantErr: ErrNotFound}, // case-sensitive
		{query: "zzz", wantErr: ErrNotFound},
		{query: "", wantErr: ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := d.Campaign(ctx, tt.query)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Campaign(%q) err = %v, want %v", tt.query, err, tt.wantErr)
				}
				for _, m := range tt.matches {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not name %s", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Campaign(%q): %v", tt.query, err)
			}
			if got.ID != tt.want {
				t.Errorf("Campaign(%q).ID = %s, want %s", tt.query, got.ID, tt.want)
			}
		})
	}
}

func TestCampaignOrdering(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	if _, err := d.LatestCampaign(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestCampaign(empty) = %v, want ErrNotFound", err)
	}
	if cs, err := d.Campaigns(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("Campaigns(empty) = %v, %v", cs, err)
	}
	// Start times chosen so that naive RFC3339Nano text (which trims
	// trailing zeros) would sort them wrongly: "...:00Z" > "...:00.5Z".
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	starts := map[string]time.Time{
		"whole":   t0,
		"half":    t0.Add(500 * time.Millisecond),
		"nano":    t0.Add(time.Nanosecond),
		"earlier": t0.Add(-time.Hour).In(time.FixedZone("Y", -8*3600)),
		"later":   t0.Add(time.Hour).In(time.FixedZone("Z", 9*3600)),
	}
	for id, s := range starts { // map order: insertion order must not matter
		if err := d.CreateCampaign(ctx, sampleCampaign(id, s)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"later", "half", "nano", "whole", "earlier"}
	cs, err := d.Campaigns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.ID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Campaigns order = %v, want %v", got, want)
	}
	latest, err := d.LatestCampaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if latest.ID != "later" {
		t.Errorf("LatestCampaign = %s, want later", latest.ID)
	}
}
