package nested

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// The nested platform's own factors, as experiment files write them.
const (
	// FImage says how the agent image reaches a parent's engine.
	FImage         = "nested.image"
	ImageLoad      = "load"      // the saved image is loaded when the parent starts
	ImagePreloaded = "preloaded" // the parent mounts a read-only store prepared once per campaign
	// FChildren is how many children share one parent.
	FChildren   = "children"
	MaxChildren = 256
	// FParentNetwork is the parent container's network on the machine;
	// the cell's network is the child's inside the parent.
	FParentNetwork = "parent.network"
	// Limits on the parent, which bound all its children.
	FParentCPUs   = "parent.cpus"
	FParentCpuset = "parent.cpuset"
	FParentMemory = "parent.memory"
	noLimit       = "none"
)

// parentNetworks are the networks a parent can have today.
var parentNetworks = []vocab.Network{vocab.Bridge, vocab.Host, vocab.OVS}

// Caps are what nested children can do: a namespace and cgroup of their
// own (inside the parent's), the parent's network or the inner engine's
// bridge, the writable layer or a tmpfs; the phases of the parent's start
// and the child's. The modes the network lab wires (Open vSwitch, macvlan,
// bridges and overlays across emulated hosts) are wired into the parent's
// namespace, which the child then shares (S1's OVS parents).
var Caps = platform.Capabilities{
	StartStop:  5 * time.Second, // rough: for the dry run's estimate
	Networks:   []vocab.Network{vocab.Host, vocab.Bridge},
	Storages:   []vocab.Storage{vocab.Layer, vocab.Tmpfs},
	OwnCgroup:  true,
	Limits:     true,
	Phases:     []vocab.Phase{vocab.Create, vocab.Start, vocab.DaemonReady, vocab.ImageReady, vocab.ChildStart, vocab.Exit, vocab.Remove},
	Tools:      true,
	UserImages: true,
	Net: platform.Net{
		OwnNetNS: true,
		Wireable: true,
		Outer: func(o map[string]string) vocab.Network {
			if vocab.Network(o[FParentNetwork]) == vocab.OVS {
				return vocab.OVS
			}
			return ""
		},
	},
	Own: platform.Own{
		Factors: []platform.Factor{
			{Name: FImage, Default: ImageLoad, Doc: "how the agent image reaches a parent's engine: load (the saved image loaded as the parent starts, S1's 6.2 s) or preloaded (a read-only image store prepared once per campaign, mounted by every parent)",
				Check: platform.OneOf(ImageLoad, ImagePreloaded)},
			{Name: FChildren, Default: "1", Doc: "children per parent, 1 to 256: a trial's instances fill one parent before the next starts",
				Check: wholeNumber(1, MaxChildren)},
			{Name: FParentNetwork, Default: string(vocab.Bridge), Doc: "the parent's network on the machine: bridge (the campaign's Docker bridge), host, or ovs (the lab's Open vSwitch bridge, with the child on the inner engine's bridge: S1 Table III's OVS parent with a bridged child); the cell's network is the child's inside the parent (host: the parent's namespace; bridge: the inner engine's own bridge)",
				Check: platform.OneOf(vocab.Strings(parentNetworks)...)},
			{Name: FParentCPUs, Default: noLimit, Doc: "CFS quota of the parent in cores, bounding all its children", Check: cores},
			{Name: FParentCpuset, Default: noLimit, Doc: "CPUs the parent (and so its children) may use", Check: cpuset},
			{Name: FParentMemory, Default: noLimit, Doc: "memory limit of the parent and its children together (at least 64MiB: it runs an engine)", Check: size(64 << 20)},
		},
		Seen: func(n vocab.Network, o map[string]string) vocab.Network {
			if n == vocab.Host { // the parent's namespace: where the parent is
				return vocab.Network(o[FParentNetwork])
			}
			return n // the inner bridge, or a mode wired into the parent
		},
		Combine: func(n vocab.Network, o map[string]string) error {
			if vocab.Network(o[FParentNetwork]) == vocab.OVS {
				if n != vocab.Bridge {
					return fmt.Errorf("parent.network ovs wires the parent into Open vSwitch with the child on its engine's bridge: network must be bridge (network %s is a child in its parent's namespace on that network: leave parent.network at bridge)", n)
				}
				if o[FChildren] != "1" {
					return fmt.Errorf("parent.network ovs wires each child's parent on its own: children must be 1")
				}
				return nil
			}
			if n.Lab(1) && n != vocab.Bridge || n.NeedsHosts() {
				if o[FParentNetwork] != string(vocab.Bridge) {
					return fmt.Errorf("with network %s the parent is wired to it and the child shares the parent's namespace: parent.network does not apply (leave it at bridge)", n)
				}
				if o[FChildren] != "1" {
					return fmt.Errorf("with network %s each child's parent is wired on its own: children must be 1", n)
				}
				return nil
			}
			if n == vocab.Bridge && vocab.Network(o[FParentNetwork]) == vocab.Host {
				return fmt.Errorf("a nested child on its engine's bridge needs a parent with a namespace of its own: with parent.network host the inner engine's bridge and NAT rules would be made in the machine's own namespace (use parent.network bridge, or network host for the child)")
			}
			return nil
		},
	},
	// The parents' engines are Docker 20.10 too (see the docker driver).
}

func init() {
	platform.Register(platform.Driver{
		Name:    "nested",
		Summary: "nested containers (S1): each instance a child container inside a parent container that runs its own Docker Engine; the parent image is built locally FROM scratch",
		Noun:    "nested child container",
		Rank:    20,
		Caps:    Caps,
		Open: func(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
			if err := engine.LocalEngine(); err != nil {
				return nil, err
			}
			if err := engine.Available(ctx); err != nil {
				return nil, err
			}
			return New(cfg.Binary)
		},
		Clean: clean,
	})
}

// clean removes what killed runs left: the parents are labelled containers
// of the outer engine, removed by the docker driver's Clean (their
// children die with them); here the host directories they used — sockets,
// saved images, preloaded stores — of campaigns whose ctrbench is gone.
func clean(_ context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	return workdir.Clean(WorkRoot, o, "directory", removeWork)
}

func wholeNumber(lo, hi int) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return "", fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		return strconv.Itoa(n), nil
	}
}

func cores(v string) (string, error) {
	if v == noLimit {
		return v, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return "", fmt.Errorf("want %s or a positive number of cores such as 0.5 or 1", noLimit)
	}
	return v, nil
}

func cpuset(v string) (string, error) {
	if v == noLimit {
		return v, nil
	}
	for _, part := range strings.Split(v, ",") {
		lo, hi, rng := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if rng {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return "", fmt.Errorf("want %s or a CPU list such as 0, 0-1 or 0,2", noLimit)
		}
	}
	return v, nil
}

func size(min int64) func(string) (string, error) {
	p := workload.P("memory", workload.Size, "", "").Range(float64(min), 1<<50)
	return func(v string) (string, error) {
		if v == noLimit {
			return v, nil
		}
		if _, err := p.Normalize(v); err != nil {
			return "", fmt.Errorf("want %s or a size of at least %d MiB: %v", noLimit, min>>20, err)
		}
		return v, nil
	}
}
