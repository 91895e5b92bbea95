package podman_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/platform/podman"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestConformance runs the real ctrbench agent in podman containers,
// through podman's Docker-compatible API, through the suite every platform
// passes; afterwards podman's service, storage and directory are gone.
func TestConformance(t *testing.T) {
	needPodman(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-podman")
	p, err := podman.New(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	nets := []vocab.Network{vocab.Host, vocab.Bridge}
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets, Tools: []string{"iperf3"},
		Storages: []vocab.Storage{vocab.Layer, vocab.Tmpfs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(filepath.Join(podman.WorkRoot, campaign)); !os.IsNotExist(err) {
			t.Errorf("podman's storage of the campaign is still there (%v)", err)
		}
		if out, _ := exec.Command("pgrep", "-f", "podman .*"+campaign).Output(); len(out) > 0 {
			t.Errorf("podman processes of the campaign still run: %s", out)
		}
		// podman's bridge (CNI's, named by ctrbench) goes with the campaign.
		br := engine.BridgeName(campaign + "-podman")
		if out, _ := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output(); strings.Contains(string(out), br) {
			t.Errorf("podman's bridge %s is still there", br)
		}
		for _, chain := range []string{"CNI-ISOLATION-STAGE-1", "CNI-ISOLATION-STAGE-2"} {
			if out, _ := exec.Command("iptables", "-w", "-S", chain).Output(); strings.Contains(string(out), br) {
				t.Errorf("iptables %s still names podman's bridge:\n%s", chain, out)
			}
		}
		// Its configuration never went to the machine's CNI directory.
		ents, _ := os.ReadDir("/etc/cni/net.d")
		for _, e := range ents {
			if b, _ := os.ReadFile(filepath.Join("/etc/cni/net.d", e.Name())); strings.Contains(string(b), campaign) {
				t.Errorf("/etc/cni/net.d/%s names the campaign", e.Name())
			}
		}
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets, Limits: true,
		Storages: map[vocab.Storage]string{vocab.Layer: "", vocab.Tmpfs: "tmpfs"}, Caps: podman.Caps})
}

// TestCleanAfterKill: what a killed run left — podman's service, a running
// container (its conmon outlives the service), the storage and its mounts —
// is removed by the driver's Clean once the campaign's owner is gone.
func TestCleanAfterKill(t *testing.T) {
	needPodman(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-podman-kill")
	p, err := podman.New(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: []vocab.Network{vocab.Host}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-loop", Network: vocab.Host, Labels: labels,
		Agent: invocation.Agent{Kind: invocation.Loop, Workload: "idle"}}); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(podman.WorkRoot, campaign)
	// The run that made it is gone: its owner is a PID that does not run.
	if err := os.WriteFile(filepath.Join(work, "owner"), []byte("999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ := platform.Lookup("podman")
	got, err := d.Clean(ctx, platform.CleanOptions{Campaign: campaign})
	if err != nil || len(got.Removed) != 1 {
		t.Fatalf("clean: %+v %v", got, err)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("the storage is still there (%v)", err)
	}
	// Zombies are this test's own children (the killed run was this
	// process): only live processes count, and only the campaign's (its
	// conmon's bundle is in its storage): other tests run podman beside
	// this one.
	if out, _ := exec.Command("sh", "-c", "ps -eo stat=,args= | grep -v '^Z' | grep -E '(conmon|podman) .*"+campaign+"' | grep -v grep").Output(); len(out) > 0 {
		t.Errorf("left running: %s", out)
	}
	if out, _ := exec.Command("sh", "-c", "mount | grep "+campaign).Output(); len(out) > 0 {
		t.Errorf("left mounted: %s", out)
	}
}

// needPodman skips a test where podman or the Docker Engine (which builds
// the agent image) is missing, and in -short runs.
func needPodman(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs podman and the Docker Engine")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed")
	}
	if err := engine.Available(context.Background()); err != nil {
		t.Skipf("no Docker Engine: %v", err)
	}
}
