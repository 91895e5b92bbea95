package native_test

import (
	"context"
	"github.com/ctrbench/ctrbench/internal/cgroup"
	"os"
	"path/filepath"
	"strconv"
	"testing"

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
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, cgroup.Base)); err == nil {
				t.Errorf("empty cgroup %s/%s left behind", c, cgroup.Base)
			}
		}
	})
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: []vocab.Network{vocab.Host}, Limits: os.Geteuid() == 0,
		Storages: map[vocab.Storage]string{vocab.Layer: ""}, Caps: native.Caps})
}

func TestRejectsOtherNetworks(t *testing.T) {
	p := native.New("/bin/true")
	err := p.Prepare(context.Background(), platform.Setup{CampaignID: "x", Networks: []vocab.Network{vocab.Bridge}})
	if err == nil {
		t.Fatal("native must refuse a bridge network")
	}
}
