// Package platform defines where an agent runs: a host process (native), a
// Docker container, and later other runtimes. Every platform passes the
// conformance suite in platformtest.
package platform

import (
	"context"
	"io"
)

// Label keys carried by every object ctrbench creates (containers, networks,
// volumes, images), so `ctrbench clean` can find leftovers.
const (
	LabelManaged  = "io.ctrbench.managed"  // always "true"
	LabelCampaign = "io.ctrbench.campaign" // campaign ID
	LabelOwnerPID = "io.ctrbench.owner-pid"
	LinkPrefix    = "ctb" // every host link ctrbench creates starts with this
)

// Network modes a platform may support.
const (
	NetHost   = "host"
	NetBridge = "bridge" // a user-defined bridge network per campaign
	// NetBridgeDefault is Docker's default bridge (docker0).
	NetBridgeDefault = "bridge-default"
	// NetNone is a namespace with loopback only: ctrbench wires it itself
	// (netlab) after the instance starts, or it is the loopback network.
	NetNone = "none"
)

// Storage levels a platform may support.
const (
	StorageLayer  = "layer"
	StorageVolume = "volume"
	StorageTmpfs  = "tmpfs"
)

// Limits are cgroup limits for one instance; zero values mean "no limit".
type Limits struct {
	CPUs        float64 `json:"cpus,omitempty"`   // CFS quota in cores, e.g. 1.5
	Cpuset      string  `json:"cpuset,omitempty"` // e.g. "0" or "0-1"
	MemoryBytes int64   `json:"memory,omitempty"`
	// Block I/O: a proportional weight (10..1000, where the kernel supports
	// it) and throttles in bytes per second on the device that holds the
	// instance's data (the platform finds it).
	BlkioWeight uint16 `json:"blkio_weight,omitempty"`
	ReadBps     int64  `json:"read_bps,omitempty"`
	WriteBps    int64  `json:"write_bps,omitempty"`
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// InstanceSpec says what to start.
type InstanceSpec struct {
	Name    string   // unique per campaign, e.g. ctrbench-3f2a-t12-server
	Args    []string // arguments to the ctrbench binary, e.g. ["agent","run",...]
	Network string   // NetHost, NetBridge, NetBridgeDefault or NetNone
	// ShareNetworkWith names a running instance (by its Name) whose network
	// namespace this one joins: both ends over loopback. Overrides Network.
	ShareNetworkWith string
	// NetNS is the path of a network namespace to run in (emulated hosts);
	// native only.
	NetNS  string
	Limits Limits
	Labels map[string]string
	// Storage is where the agent's data directory lives: "" or "layer"
	// (the platform's own filesystem), "volume" or "tmpfs".
	Storage string
}

// Exit is how an instance ended.
type Exit struct {
	Code   int
	Stderr string // tail of stderr, for failure reasons
}

// Instance is one running agent.
type Instance interface {
	// Stdout streams the agent's standard output while it runs; it reaches
	// EOF when the agent exits.
	Stdout() io.Reader
	// Wait blocks until the agent exits or ctx ends.
	Wait(ctx context.Context) (Exit, error)
	// IP is the instance's own address, reachable from the host and from
	// instances on the same network; "" when it shares the host's network
	// namespace.
	IP() string
	// Stop asks the agent to finish (SIGTERM): an `agent loop` neighbour
	// then prints its result and exits. It does not remove the instance.
	Stop(ctx context.Context) error
	// Remove stops the agent if it still runs and releases everything made
	// for it. It is safe to call more than once.
	Remove(ctx context.Context) error
}

// NetNSer is an instance whose network namespace can be entered by path,
// so ctrbench can wire links into it (Docker's --network none).
type NetNSer interface {
	NetNSPath() string
}

// Setup tells a platform what a campaign will need before the first trial.
type Setup struct {
	CampaignID string
	Labels     map[string]string // to put on every created object
	Networks   []string          // network modes the campaign uses on this platform
	Tools      []string          // external binaries the workloads need (for images)
	Storages   []string          // storage levels the campaign uses on this platform
	Progress   io.Writer         // human-readable notes (image build, network creation)
	// CgroupParent, when set, is a cgroup path below the root (e.g.
	// "ctrbench/<campaign>/machine") that every instance is placed under:
	// the experiment's emulated machine size, limits set by the caller.
	CgroupParent string
}

// Platform starts instances.
type Platform interface {
	Name() string
	// Prepare creates campaign-wide resources (images, networks).
	Prepare(ctx context.Context, s Setup) error
	// Start launches one agent. The returned instance is running.
	Start(ctx context.Context, spec InstanceSpec) (Instance, error)
	// HostAddr is the host's address as seen from an instance on the given
	// network, for a client in that network reaching a server in the host's
	// namespace; "127.0.0.1" for NetHost.
	HostAddr(network string) string
	// Close removes campaign-wide resources made by Prepare.
	Close(ctx context.Context) error
	// Info describes the platform for the campaign's environment record
	// (versions, image ID, network subnet...).
	Info() map[string]string
}
