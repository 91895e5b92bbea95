package vm_test

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
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/platform/vm"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestConformance boots the real ctrbench agent in QEMU virtual machines
// (TCG here: no hardware virtualisation) through the suite every platform
// passes, on the campaign's bridge, with the data directory on the
// machine's ext4 disk; afterwards no QEMU, tap, bridge or file is left.
func TestConformance(t *testing.T) { conform(t, "test-vm", vm.EngineNone, "ext4") }

// TestConformanceEngineInside: the same suite with the agent in a
// container of a Docker Engine inside each machine (vm.engine docker):
// its data directory is the container's writable layer (overlay), the
// image store a seed machine built, mounted read-only.
func TestConformanceEngineInside(t *testing.T) {
	if os.Getenv("CTRBENCH_E2E_FULL") == "" {
		t.Skip("make test-full runs it (CTRBENCH_E2E_FULL=1); make test runs its path in e2e TestVMWithEngineInside")
	}
	conform(t, "test-vme", vm.EngineDocker, "overlay")
}

// conform runs the suite on machines whose agent runs as engine says,
// its data directory on a file system of type fstype.
func conform(t *testing.T, prefix, engine, fstype string) {
	needVM(t)
	campaign, labels := platformtest.NewCampaign(prefix)
	p := vm.New(testutil.Binary(t))
	nets := []vocab.Network{vocab.Bridge}
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets,
		Options: map[string][]string{vm.FEngine: {engine}}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", p.Info())
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		leftovers(t, campaign)
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets,
		Storages: map[vocab.Storage]string{vocab.Layer: fstype}, Caps: vm.Caps,
		Options: map[string]string{vm.FEngine: engine}})
}

// TestCleanAfterKill: a machine a killed run left is removed, with its
// tap, bridge and directory, by the driver's Clean.
func TestCleanAfterKill(t *testing.T) {
	needVM(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-vm-kill")
	p := vm.New(testutil.Binary(t))
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: []vocab.Network{vocab.Bridge}}); err != nil {
		t.Fatal(err)
	}
	in, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-loop", Network: vocab.Bridge, Labels: labels,
		Agent: invocation.Agent{Kind: invocation.Loop, Workload: "idle"}})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(vm.WorkRoot, campaign)
	if err := os.WriteFile(filepath.Join(work, "owner"), []byte("999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ := platform.Lookup("vm")
	got, err := d.Clean(ctx, platform.CleanOptions{Campaign: campaign})
	if err != nil || len(got.Removed) != 1 {
		t.Fatalf("clean: %+v %v", got, err)
	}
	if ex, err := in.Wait(ctx); err != nil || ex.Code == 0 {
		t.Errorf("the machine was not killed: %+v %v", ex, err)
	}
	leftovers(t, campaign)
}

func leftovers(t *testing.T, campaign string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(vm.WorkRoot, campaign)); !os.IsNotExist(err) {
		t.Errorf("the campaign's directory is still there (%v)", err)
	}
	br := vm.BridgeName(campaign)
	ls, _ := links.List()
	for _, l := range ls {
		if strings.HasPrefix(l, br) {
			t.Errorf("link %s is still there", l)
		}
	}
	if out, _ := exec.Command("sh", "-c", "ps -eo stat=,args= | grep -v '^Z' | grep 'qemu-system.*"+campaign+"' | grep -v grep").Output(); len(out) > 0 {
		t.Errorf("left running: %s", out)
	}
}

func needVM(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots virtual machines")
	}
	if err := vm.Available(); err != nil {
		t.Skip(err)
	}
}
