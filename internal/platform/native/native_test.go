package native_test

import (
	"context"
	"github.com/ctrbench/ctrbench/internal/cgroup"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/native"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	campaign := "test-native-" + strconv.Itoa(os.Getpid())
	p := native.New(testutil.Binary(t))
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: campaign, Networks: []vocab.Network{vocab.Host}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close(context.Background())
		for _, c := range []string{"cpu", "cpuset", "memory"} {
			// The parent goes too when no other campaign uses it.
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, cgroup.Base, campaign)); err == nil {
				t.Errorf("cgroup %s/%s/%s left behind", c, cgroup.Base, campaign)
			}
			if emptyParentStays(filepath.Join("/sys/fs/cgroup", c, cgroup.Base)) {
				t.Errorf("empty cgroup %s/%s left behind", c, cgroup.Base)
			}
		}
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: []vocab.Network{vocab.Host}, Limits: os.Geteuid() == 0,
		Storages: map[vocab.Storage]string{vocab.Layer: ""}, Caps: native.Caps})
}

// emptyParentStays reports whether the parent of every campaign's cgroups
// is there and stays empty for a second. make test runs other packages
// beside this one, and their campaigns share the parent: one that holds a
// campaign's group, or gets one within the second (a campaign being
// prepared makes the parent first), is theirs, not left behind by this
// test.
func emptyParentStays(dir string) bool {
	for end := time.Now().Add(time.Second); ; time.Sleep(50 * time.Millisecond) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return false
		}
		for _, e := range entries {
			if e.IsDir() {
				return false
			}
		}
		if time.Now().After(end) {
			return true
		}
	}
}

func TestRejectsOtherNetworks(t *testing.T) {
	p := native.New("/bin/true")
	err := p.Prepare(context.Background(), platform.Setup{CampaignID: "x", Networks: []vocab.Network{vocab.Bridge}})
	if err == nil {
		t.Fatal("native must refuse a bridge network")
	}
}

// A killed run's directory (users' images unpacked, agents' data) is the
// campaign's, below WorkRoot: Close removes it, and clean removes one whose
// ctrbench is gone (here forced).
func TestWorkDirectoryGoes(t *testing.T) {
	campaign := "test-native-work-" + strconv.Itoa(os.Getpid())
	dir := filepath.Join(native.WorkRoot, campaign)
	p := native.New(testutil.Binary(t))
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: campaign, Networks: []vocab.Network{vocab.Host}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("no campaign directory: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after Close: %v", dir, err)
	}
	// As a killed run leaves it.
	p = native.New(testutil.Binary(t))
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: campaign, Networks: []vocab.Network{vocab.Host}}); err != nil {
		t.Fatal(err)
	}
	d, _ := platform.Lookup("native")
	out, err := d.Clean(context.Background(), platform.CleanOptions{Campaign: campaign, Force: true})
	if err != nil || len(out.Removed) != 1 {
		t.Fatalf("clean: %+v, %v", out, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after clean: %v", dir, err)
	}
	_ = p.Close(context.Background())
}
