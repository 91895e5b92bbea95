package lxc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/hostbridge"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// Caps are what LXC containers can do here: namespaces and cgroups of
// their own; the host's network (the machine's, or an emulated host's,
// joined by path), a bridge, another container's namespace (loopback) and
// every mode the network lab wires; the overlay layer, a
// bind-mounted host directory (volume) or a tmpfs; limits.
var Caps = platform.Capabilities{
	StartStop:  time.Second, // rough: for the dry run's estimate
	Networks:   []vocab.Network{vocab.Host, vocab.Bridge},
	Storages:   []vocab.Storage{vocab.Layer, vocab.Volume, vocab.Tmpfs},
	OwnCgroup:  true,
	Limits:     true,
	Phases:     []vocab.Phase{vocab.Create, vocab.Start, vocab.Exit, vocab.Remove},
	Tools:      true,
	UserImages: true,
	Net: platform.Net{
		OwnNetNS:    true,
		Wireable:    true,
		JoinNetwork: true,
		JoinsNSPath: true, // lxc.namespace.share.net takes a namespace file
	},
}

func init() {
	platform.Register(platform.Driver{
		Name:    "lxc",
		Summary: "LXC system containers, started by LXC's own tools (lxc-execute) on a root file system built locally from the agent image's content",
		Noun:    "LXC container",
		Rank:    12,
		Caps:    Caps,
		Open: func(_ context.Context, cfg platform.Config) (platform.Platform, error) {
			if err := Available(); err != nil {
				return nil, err
			}
			return New(cfg.Binary), nil
		},
		Clean: clean,
	})
}

// Available says why LXC cannot run here, or nil.
func Available() error {
	for _, tool := range []string{"lxc-execute", "lxc-stop"} {
		if _, err := exec.LookPath(tool); err != nil {
			return errors.New("LXC is not installed: `make setup` installs it (Debian package lxc)")
		}
	}
	return nil
}

// clean removes what a killed run left: its lxc-execute monitors (which
// take their containers with them), the bridge and its forward rule, and
// the campaign's directory; `--images` also removes the root file systems.
// cgroups and ctb links go with ctrbench's general clean as well.
func clean(_ context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	out, err := workdir.Clean(WorkRoot, o, "lxc containers", func(work string) error {
		campaign := filepath.Base(work)
		workdir.Kill("lxc-execute", work) // the monitors take their containers along
		cgroup.RemoveTreeWhenIdle(cgroup.CampaignTree(campaign), 5*time.Second)
		return errors.Join(hostbridge.Clean(BridgeName(campaign)), os.RemoveAll(work))
	})
	if err == nil && o.Images && o.Campaign == "" {
		var removed []string
		removed, err = workdir.RemoveCaches("lxc root file systems", RootfsRoot, RootfsRoot+"-tmp")
		out.Removed = append(out.Removed, removed...)
	}
	return out, err
}
