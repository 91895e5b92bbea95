package docker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Caps are what Docker containers can do: namespaces and a cgroup of their
// own, Docker's host, per-campaign bridge and default bridge networks, any
// namespace ctrbench wires itself (--network none), one container joining
// another's (loopback) or an emulated host's (one it holds), the writable layer, a volume or a tmpfs.
var Caps = platform.Capabilities{
	StartStop:  700 * time.Millisecond, // rough: for the dry run's estimate
	Networks:   []vocab.Network{vocab.Host, vocab.Bridge, vocab.BridgeDefault, vocab.Published, vocab.PublishedProxy, vocab.Routed, vocab.NATUnprotected},
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
		Holder:      holder{},
		Refuse:      refuse,
	},
	Own: platform.Own{
		Factors: []platform.Factor{RuntimeFactor, ImageStoreFactor},
	},
}

// refuse says why a network the driver lists is not on this machine's
// engine: the bridge gateway modes need Docker Engine 28 or later. An
// engine that does not answer now is not refused here: preparing the
// platform says what is wrong then.
func refuse(n vocab.Network) error {
	if n.GatewayMode() == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), engine.PingTimeout)
	defer cancel()
	facts, err := machineFacts(ctx)
	if err != nil {
		return nil
	}
	return facts.HasGatewayModes()
}

// machineFacts are the facts of the engine the environment names, read
// once per process (validation asks for each cell).
func machineFacts(ctx context.Context) (engine.Facts, error) {
	factsOnce.Do(func() {
		e, err := engine.New()
		if err != nil {
			factsErr = err
			return
		}
		defer e.Close()
		facts, factsErr = e.Facts(ctx)
	})
	return facts, factsErr
}

var (
	factsOnce sync.Once
	facts     engine.Facts
	factsErr  error
)

func init() {
	platform.Register(platform.Driver{
		Name:    "docker",
		Summary: "Docker Engine containers, through the Engine API; the image is built locally FROM scratch",
		Noun:    "Docker container",
		Rank:    10,
		Caps:    Caps,
		Open: func(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
			if err := engine.LocalEngine(); err != nil {
				return nil, err
			}
			if err := engine.Available(ctx); err != nil {
				return nil, err
			}
			return New(WithBinary(cfg.Binary))
		},
		Clean: func(ctx context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
			var out platform.Cleaned
			if err := engine.Available(ctx); err != nil {
				out.Skipped, _, _ = strings.Cut(fmt.Sprintf("not reachable, skipped (%v)", err), "\n")
				return out, nil
			}
			rep, err := engine.Clean(ctx, o.Campaign, o.Force, o.Images)
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
