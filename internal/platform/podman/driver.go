package podman

import (
	"context"
	"errors"
	"os/exec"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// Caps are what podman containers can do here: a namespace and cgroup of
// their own, the host's network (the machine's, or an emulated host's,
// joined by path), another container's namespace (loopback)
// and every mode the network lab wires (a container started with no
// network, its namespace entered by its process), podman's own bridge
// network (CNI here, netavark on newer podman: a network of the campaign
// whose bridge ctrbench names ctb…, its veths podman's), the writable
// layer or a tmpfs, limits.
var Caps = platform.Capabilities{
	StartStop:  time.Second, // rough: for the dry run's estimate
	Networks:   []vocab.Network{vocab.Host, vocab.Bridge, vocab.Published},
	Storages:   []vocab.Storage{vocab.Layer, vocab.Tmpfs},
	OwnCgroup:  true,
	Limits:     true,
	Phases:     []vocab.Phase{vocab.Create, vocab.Start, vocab.Exit, vocab.Remove},
	Tools:      true,
	UserImages: true,
	// No runtime factor: podman 4.3's Docker-compatible API ignores
	// HostConfig.Runtime (a container asked for crun is created with the
	// configured runc; measured), so the choice cannot be honoured here.
	Net: platform.Net{
		OwnNetNS:    true,
		Wireable:    true,
		JoinNetwork: true,
		JoinsNSPath: true, // network mode ns:<path>
	},
}

func init() {
	platform.Register(platform.Driver{
		Name:    "podman",
		Summary: "podman containers, through podman's Docker-compatible API on a service ctrbench starts with its own configuration (runc, cgroupfs)",
		Noun:    "podman container",
		Rank:    15,
		Caps:    Caps,
		Open: func(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
			if _, err := exec.LookPath("podman"); err != nil {
				return nil, errors.New("podman is not installed: `make setup` installs it (Debian package podman)")
			}
			if err := engine.LocalEngine(); err != nil {
				return nil, err
			}
			if err := engine.Available(ctx); err != nil {
				return nil, err // the agent image is built by the machine's Docker Engine
			}
			return New(cfg.Binary)
		},
		Clean: clean,
	})
}

// clean removes the podman storage of campaigns whose ctrbench is gone:
// their service, containers, mounts and directory.
func clean(_ context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	return workdir.Clean(WorkRoot, o, "podman storage", func(work string) error {
		workdir.Kill("podman", work) // the service, when the run was killed
		return removeWork(work)
	})
}
