package nested_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/nested"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestConformance runs the real ctrbench agent in nested children through
// the suite every platform must pass: each instance a child in a parent of
// its own, on the parent's network (host) and on the inner engine's bridge.
// Afterwards no parent, route or work directory is left.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Docker Engine")
	}
	ctx := context.Background()
	if err := engine.Available(ctx); err != nil {
		t.Skipf("no Docker Engine: %v", err)
	}
	campaign, labels := platformtest.NewCampaign("test-nested")
	p, err := nested.New(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	nets := []vocab.Network{vocab.Host, vocab.Bridge}
	storages := map[vocab.Storage]string{vocab.Layer: "overlay", vocab.Tmpfs: "tmpfs"}
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets, Tools: []string{"iperf3"},
		Storages: []vocab.Storage{vocab.Layer, vocab.Tmpfs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(filepath.Join(nested.WorkRoot, campaign)); !os.IsNotExist(err) {
			t.Errorf("the campaign's work directory is still there (%v)", err)
		}
		left, err := engine.Leftovers(context.Background(), campaign)
		if err != nil || !left.Empty() {
			t.Errorf("left behind: %+v (%v)", left, err)
		}
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets, Limits: true, Storages: storages, Caps: nested.Caps})
}
