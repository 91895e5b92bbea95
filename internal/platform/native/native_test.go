package native_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/native"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	campaign := "test-native-" + strconv.Itoa(os.Getpid())
	p := native.New(testutil.Binary(t))
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: campaign, Networks: []string{platform.NetHost}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close(context.Background())
		for _, c := range []string{"cpu", "cpuset", "memory"} {
			// The parent goes too when no other campaign uses it.
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, native.CgroupParent, campaign)); err == nil {
				t.Errorf("cgroup %s/%s/%s left behind", c, native.CgroupParent, campaign)
			}
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, native.CgroupParent)); err == nil {
				t.Errorf("empty cgroup %s/%s left behind", c, native.CgroupParent)
			}
		}
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: []string{platform.NetHost}, Limits: os.Geteuid() == 0,
		Storages: map[string]string{platform.StorageLayer: ""}})
}

func TestRejectsOtherNetworks(t *testing.T) {
	p := native.New("/bin/true")
	err := p.Prepare(context.Background(), platform.Setup{CampaignID: "x", Networks: []string{platform.NetBridge}})
	if err == nil {
		t.Fatal("native must refuse a bridge network")
	}
}
