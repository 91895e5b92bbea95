package lxc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/lxc"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestConformance runs the real ctrbench agent in LXC containers through
// the suite every platform passes, on the host's network and on LXC's
// bridge; afterwards no container, bridge, forward rule or directory of
// the campaign is left.
func TestConformance(t *testing.T) {
	needLXC(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-lxc")
	p := lxc.New(testutil.Binary(t))
	nets := []vocab.Network{vocab.Host, vocab.Bridge}
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets, Tools: []string{"iperf3"},
		Storages: []vocab.Storage{vocab.Layer, vocab.Volume, vocab.Tmpfs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		leftovers(t, campaign)
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets, Limits: true,
		Storages: map[vocab.Storage]string{vocab.Layer: "overlay", vocab.Volume: "", vocab.Tmpfs: "tmpfs"}, Caps: lxc.Caps})
}

// TestCleanAfterKill: what a killed run left — a running container, the
// bridge and its forward rule, the directory — is removed by the driver's
// Clean once the campaign's owner is gone.
func TestCleanAfterKill(t *testing.T) {
	needLXC(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-lxc-kill")
	p := lxc.New(testutil.Binary(t))
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: []vocab.Network{vocab.Bridge}}); err != nil {
		t.Fatal(err)
	}
	in, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-loop", Network: vocab.Bridge, Labels: labels,
		Agent: invocation.Agent{Kind: invocation.Loop, Workload: "idle"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = in
	work := filepath.Join(lxc.WorkRoot, campaign)
	// The run that made it is gone: its owner is a PID that does not run.
	if err := os.WriteFile(filepath.Join(work, "owner"), []byte("999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ := platform.Lookup("lxc")
	got, err := d.Clean(ctx, platform.CleanOptions{Campaign: campaign})
	if err != nil || len(got.Removed) != 1 {
		t.Fatalf("clean: %+v %v", got, err)
	}
	ex, err := in.Wait(ctx)
	if err != nil || ex.Code == 0 {
		t.Errorf("the container was not killed: %+v %v", ex, err)
	}
	leftovers(t, campaign)
}

// leftovers fails t if anything of campaign's is still there.
func leftovers(t *testing.T, campaign string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(lxc.WorkRoot, campaign)); !os.IsNotExist(err) {
		t.Errorf("the campaign's directory is still there (%v)", err)
	}
	br := lxc.BridgeName(campaign)
	if ls, _ := links.List(); contains(ls, br) {
		t.Errorf("bridge %s is still there", br)
	}
	if out, _ := exec.Command("iptables", "-w", "-S", "FORWARD").Output(); strings.Contains(string(out), br) {
		t.Errorf("a forward rule of %s is still there:\n%s", br, out)
	}
	if out, _ := exec.Command("sh", "-c", "ps -eo stat=,args= | grep -v '^Z' | grep 'lxc-execute.*"+campaign+"' | grep -v grep").Output(); len(out) > 0 {
		t.Errorf("left running: %s", out)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// needLXC skips a test where LXC is missing, and in -short runs.
func needLXC(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs LXC")
	}
	if err := lxc.Available(); err != nil {
		t.Skip(err)
	}
}
