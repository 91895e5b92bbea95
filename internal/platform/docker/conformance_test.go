package docker_test

import (
	"context"
	"testing"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestConformance runs the real ctrbench agent in containers through the
// suite every platform must pass.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Docker Engine")
	}
	ctx := context.Background()
	if err := engine.Available(ctx); err != nil {
		t.Skipf("no Docker Engine: %v", err)
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	facts, err := eng.Facts(ctx)
	eng.Close()
	if err != nil {
		t.Fatal(err)
	}
	campaign, labels := platformtest.NewCampaign("test-conf")
	p, err := docker.New(docker.WithBinary(testutil.Binary(t)))
	if err != nil {
		t.Fatal(err)
	}
	nets := []vocab.Network{vocab.Host, vocab.Bridge}
	// A container's root is on what the engine's storage driver mounts:
	// overlay (overlay2), fuse (fuse-overlayfs, as on this project's
	// machines since the engine came installed).
	storages := map[vocab.Storage]string{vocab.Layer: facts.LayerFS(), vocab.Volume: "", vocab.Tmpfs: "tmpfs"}
	t.Logf("engine %s, storage driver %s: a container's root on %q", facts.Versions["docker.version"], facts.StorageDriver, facts.LayerFS())
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets, Tools: []string{"iperf3"},
		Storages: []vocab.Storage{vocab.Layer, vocab.Volume, vocab.Tmpfs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets, Limits: true, Storages: storages, Caps: docker.Caps})
}
