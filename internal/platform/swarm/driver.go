// Package swarm is the Docker Swarm platform: every instance is a swarm
// service of one task, placed on a node by constraint, on Docker's own
// overlay network or on its node's host network. The cluster is one of two:
//
//   - emulated here (no engine named): N nodes, each a container of the
//     machine's engine running a Docker Engine of its own (the nested
//     platform's engine containers, package nested: own network namespace,
//     data root, exec root and containerd), on the campaign's bridge, which
//     is their underlay. Node 1 initialises the swarm and the others join
//     with its token; the agent image reaches every node by save and load.
//     Everything goes with the nodes at the end, on Ctrl-C, and by
//     `ctrbench clean` after a kill (they carry the campaign's labels).
//   - a user's swarm (--docker-host, --context, DOCKER_HOST or
//     DOCKER_CONTEXT): its manager's engine is driven; nodes are found,
//     never changed; ctrbench's labelled services, networks and the image it
//     loaded are all it makes there, and it removes them.
//
// Task states and their timestamps come from the swarm; the agent's output
// from the task's logs. All Engine API calls go through package engine.
package swarm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/nested"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// MaxNodes is the most nodes a cell may ask of the swarm (an emulated
// node is a whole engine: 8 of them are about 1.5 GiB).
const MaxNodes = 8

// LabelNode is the label ctrbench puts on an emulated node: its index.
const LabelNode = "io.ctrbench.node"

// Caps: a service task has a namespace and a cgroup of its own; it is on
// Docker's swarm overlay, the encrypted overlay, its node's host network
// or, through a published port, the routing mesh; limits are the
// service's CPU and memory limits.
var Caps = platform.Capabilities{
	StartStop: 3 * time.Second, // rough: for the dry run's estimate
	Networks:  []vocab.Network{vocab.Host, vocab.Overlay, vocab.OverlayEncrypted, vocab.Ingress},
	Storages:  []vocab.Storage{vocab.Layer, vocab.Tmpfs},
	OwnCgroup: true,
	Limits:    true,
	NoLimits: map[string]string{
		"cpuset":       "a swarm service has CPU and memory limits only (the Engine API's task resources have no cpuset)",
		"blkio_weight": "a swarm service has no block I/O limits",
		"read_bps":     "a swarm service has no block I/O limits",
		"write_bps":    "a swarm service has no block I/O limits",
		vocab.FPids:    "ctrbench gives a swarm service CPU and memory limits only",
	},
	Phases:     []vocab.Phase{vocab.Create, vocab.Assigned, vocab.Preparing, vocab.Starting, vocab.Start, vocab.Exit, vocab.Remove},
	Tools:      true,
	UserImages: true,
	Cluster:    cluster{},
	// Tasks end through the nodes' engines, each in its own daemon: no
	// shared lock to deadlock, but a chain's agents still leave one at a
	// time, as Docker's do.
	Net: platform.Net{
		OwnNetNS: true,
		Refuse:   refuse,
	},
}

func init() {
	platform.Register(platform.Driver{
		Name:    "swarm",
		Summary: "Docker Swarm services (one task each) on an emulated cluster of Docker Engines here, or on your swarm (--docker-host)",
		Noun:    "swarm task",
		Rank:    25,
		Caps:    Caps,
		Open: func(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
			return Open(ctx, cfg)
		},
		Clean: clean,
	})
}

// remoteNamed reports whether an engine is named by the environment (the
// CLI's --docker-host and --context set it): the swarm is a user's.
func remoteNamed() bool {
	return os.Getenv("DOCKER_HOST") != "" || os.Getenv("DOCKER_CONTEXT") != ""
}

// refuse says why a network cannot be had where ctrbench builds the
// swarm: the kernel of this machine is the nodes' kernel. On a user's
// swarm the nodes' kernels are not visible from here; the engine answers.
func refuse(n vocab.Network) error {
	if remoteNamed() {
		return nil
	}
	switch n {
	case vocab.OverlayEncrypted:
		if !kernelHas("esp4", "") {
			return fmt.Errorf("network %s is Docker's encrypted overlay (IPsec ESP between nodes), and this kernel has no ESP (no esp4 module, built in or loadable): use overlay, or a swarm whose nodes have it (--docker-host)", n)
		}
	case vocab.Ingress:
		if !kernelHas("ip_vs", "/proc/net/ip_vs") {
			return fmt.Errorf("network %s reaches a server through the routing mesh, which needs IPVS, and this kernel has none (no /proc/net/ip_vs, no ip_vs module built in or loadable): use overlay or host, or a swarm whose nodes have it (--docker-host)", n)
		}
		return fmt.Errorf("network %s (the routing mesh) is detected but not built in this version of ctrbench: no machine it was developed on has IPVS to test it; use overlay or host", n)
	}
	return nil
}

// kernelHas reports whether the running kernel has module mod: loaded or
// built in (/sys/module, modules.builtin), loadable (its .ko under
// /lib/modules/<release>), or its proc file exists.
func kernelHas(mod, procFile string) bool {
	if procFile != "" {
		if _, err := os.Stat(procFile); err == nil {
			return true
		}
	}
	if _, err := os.Stat("/sys/module/" + mod); err == nil {
		return true
	}
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	dir := filepath.Join("/lib/modules", strings.TrimSpace(string(rel)))
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil && strings.Contains(string(b), "/"+mod+".ko") {
		return true
	}
	found := false
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), mod+".ko") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// clean removes what a killed run left: an emulated swarm's directories
// (its nodes are containers of the machine's engine and go with the docker
// platform's clean), and on a user's swarm ctrbench's services and
// networks.
func clean(ctx context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	out, err := workdir.Clean(WorkRoot, o, "directory", nested.RemoveWork)
	if err != nil || (o.Engine.IsZero() && !remoteNamed()) {
		return out, err
	}
	sw, err := engine.DialSwarm(o.Engine)
	if err != nil {
		out.Skipped = firstLine(err)
		return out, nil
	}
	defer sw.Close()
	st, err := sw.State(ctx)
	if err != nil || !st.Manager {
		out.Skipped = fmt.Sprintf("engine %s is not a swarm manager, skipped", sw.Host)
		if err != nil {
			out.Skipped = firstLine(err)
		}
		return out, nil
	}
	keep := func(labels map[string]string) bool { return !o.Force && owner.Running(labels) }
	left, err := sw.Leftovers(ctx, o.Campaign, true, keep)
	for _, s := range left.Services {
		out.Removed = append(out.Removed, "swarm service "+s)
	}
	for _, n := range left.Networks {
		out.Removed = append(out.Removed, "swarm network "+n)
	}
	return out, err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// cluster is the swarm as a cluster platform: up to MaxNodes nodes, an
// overlay's routes learnt by gossip, the links between emulated nodes
// shaped by their engines' bridge (Platform.SetUnderlayRate).
type cluster struct{}

func (cluster) MaxNodes() int      { return MaxNodes }
func (cluster) RoutesSettle() bool { return true }

func (cluster) Shape(p platform.Platform, u vocab.Underlay) error {
	sw, ok := p.(*Platform)
	if !ok {
		return fmt.Errorf("not an open swarm platform (%T)", p)
	}
	if u.Delays() {
		return fmt.Errorf("swarm: underlay %q: the links between a swarm's nodes are shaped in rate only", u)
	}
	return sw.SetUnderlayRate(u.Rate)
}

// Delays: a swarm's node links are shaped in rate only.
func (cluster) Delays() bool { return false }
