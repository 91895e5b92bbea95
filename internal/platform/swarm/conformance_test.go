package swarm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/platform/swarm"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestConformance runs the real agent as swarm services on a two-node
// swarm emulated here through the suite every platform must pass, on
// Docker's overlay and on the node's host network. Afterwards no node,
// network or work directory is left.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Docker Engine")
	}
	ctx := context.Background()
	if err := engine.Available(ctx); err != nil {
		t.Skipf("no Docker Engine: %v", err)
	}
	t.Setenv("DOCKER_HOST", "")
	os.Unsetenv("DOCKER_HOST")
	campaign, labels := platformtest.NewCampaign("test-swarm")
	p, err := swarm.Open(ctx, platform.Config{Binary: testutil.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	nets := []vocab.Network{vocab.Overlay, vocab.Host}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(filepath.Join(swarm.WorkRoot, campaign)); !os.IsNotExist(err) {
			t.Errorf("the campaign's work directory is still there (%v)", err)
		}
		left, err := engine.Leftovers(context.Background(), campaign)
		if err != nil || !left.Empty() {
			t.Errorf("left behind: %+v (%v)", left, err)
		}
	})
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets, Hosts: 2,
		Storages: []vocab.Storage{vocab.Layer, vocab.Tmpfs}}); err != nil {
		t.Fatal(err)
	}
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets, Limits: true,
		Storages: map[vocab.Storage]string{vocab.Layer: "overlay", vocab.Tmpfs: "tmpfs"}, Caps: swarm.Caps})
}
