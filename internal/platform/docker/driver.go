package docker

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Caps are what Docker containers can do: namespaces and a cgroup of their
// own, Docker's host, per-campaign bridge and default bridge networks, any
// namespace ctrbench wires itself (--network none), one container joining
// another's (loopback), the writable layer, a volume or a tmpfs.
var Caps = platform.Capabilities{
	Networks:    []vocab.Network{vocab.Host, vocab.Bridge, vocab.BridgeDefault},
	OwnNetNS:    true,
	Wireable:    true,
	JoinNetwork: true,
	Storages:    []vocab.Storage{vocab.Layer, vocab.Volume, vocab.Tmpfs},
	OwnCgroup:   true,
	Limits:      true,
	Phases:      []vocab.Phase{vocab.Create, vocab.Start, vocab.Exit, vocab.Remove},
	Tools:       true,
	Factors:     []platform.Factor{RuntimeFactor},
	// Docker 20.10 deadlocks when many containers exit at once.
	EndOneAtATime: true,
}

func init() {
	platform.Register(platform.Driver{
		Name:    "docker",
		Summary: "Docker Engine containers, through the Engine API; the image is built locally FROM scratch",
		Noun:    "Docker container",
		Rank:    10,
		Caps:    Caps,
		Open: func(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
			if err := LocalEngine(); err != nil {
				return nil, err
			}
			if err := Available(ctx); err != nil {
				return nil, err
			}
			return New(WithBinary(cfg.Binary))
		},
		Clean: func(ctx context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
			var out platform.Cleaned
			if err := Available(ctx); err != nil {
				out.Skipped, _, _ = strings.Cut(fmt.Sprintf("not reachable, skipped (%v)", err), "\n")
				return out, nil
			}
			rep, err := Clean(ctx, o.Campaign, o.Force, o.Images)
			for _, kind := range []struct {
				name  string
				items []string
			}{{"container", rep.Containers}, {"network", rep.Networks}, {"volume", rep.Volumes}, {"image", rep.Images}} {
				for _, it := range kind.items {
					out.Removed = append(out.Removed, kind.name+" "+it)
				}
			}
			out.Kept = rep.Skipped
			return out, err
		},
	})
}

// LocalEngine says why the engine the environment names cannot be driven
// as this machine's: the docker, nested and podman platforms enter their
// containers' namespaces and cgroups here, so a remote engine
// (DOCKER_HOST=tcp://…, as --docker-host sets for a user's swarm) is for
// the swarm platform only.
func LocalEngine() error {
	h := os.Getenv("DOCKER_HOST")
	if c := os.Getenv("DOCKER_CONTEXT"); h == "" && c != "" && c != "default" {
		if host, _, err := contextEndpoint(c); err == nil {
			h = host
		}
	}
	if h == "" || strings.HasPrefix(h, "unix://") {
		return nil
	}
	return fmt.Errorf("the docker engine at %s is not this machine's: platforms docker, nested and podman drive the engine here (its containers' namespaces and cgroups are entered from this machine); a remote engine is for platform swarm", h)
}
