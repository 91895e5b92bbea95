// Package vocab is the vocabulary every part of ctrbench shares: network
// modes, storage levels and the phases of an instance's life. Each word and
// each fact about it is written here once; experiment files (spec),
// platform drivers, the resolver (plan) and the network lab (netlab) use
// these values rather than spellings of their own.
package vocab

import (
	"slices"
	"strconv"
)

// Network is a network mode: how the instances of a cell reach each other.
type Network string

// Network modes. Host through OverlayEncrypted are the levels of the
// network factor; None is what a platform is asked for when ctrbench wires
// the namespace itself (or an instance joins another's for Loopback).
const (
	Host             Network = "host"           // the machine's namespace, or an emulated host's
	Loopback         Network = "loopback"       // every role of a pair in one instance's namespace
	Bridge           Network = "bridge"         // a bridge made for the campaign (routed across emulated hosts)
	BridgeDefault    Network = "bridge-default" // an engine's default bridge (Docker's docker0)
	Macvlan          Network = "macvlan"        // bridge-mode macvlan on a parent veth ctrbench creates
	OVS              Network = "ovs"            // an Open vSwitch bridge, instances on veth pairs
	Overlay          Network = "overlay"        // VXLAN between emulated hosts
	OverlayEncrypted Network = "overlay-encrypted"
	// Ingress reaches a server through a port published on every node of
	// a cluster and its routing mesh (Docker Swarm's ingress network).
	Ingress Network = "ingress"
	// Pod is a Kubernetes cluster's pod network, which its CNI plugin
	// makes: pods on one node and across nodes at their own addresses.
	Pod Network = "pod"
	// Service reaches a server through a Kubernetes Service, at its
	// ClusterIP, which kube-proxy translates to the server pod's address
	// (the Service's hop); NodePort through the port its Service opens
	// on every node, at the server's node's address.
	Service  Network = "service"
	NodePort Network = "nodeport"
	// Published reaches a server on the campaign's bridge through a port
	// its engine publishes on the machine (docker run -p), on the
	// bridge's own address: the engine's NAT rules carry it (the path of
	// a client on the machine when the engine's userland proxy is off,
	// and of a client on another host, proxy on or off: the DNAT rules
	// take its connection first). PublishedProxy publishes it on loopback,
	// which the engine's userland proxy (docker-proxy) carries: the path
	// of a client on the machine with the engine's defaults. Between
	// emulated hosts, Published is Docker's default networking on each
	// host, which the lab builds: a bridge per host whose subnet is
	// masqueraded as it leaves, the server's ports published on its
	// host's address (S3's two hosts).
	Published      Network = "published"
	PublishedProxy Network = "published-proxy"
	// Routed and NATUnprotected are the campaign's bridge in Docker 28's
	// gateway modes (com.docker.network.bridge.gateway_mode_ipv4): routed
	// is a bridge without NAT, its containers reached at their own
	// addresses (the path Docker 28 offers instead of published ports);
	// nat-unprotected keeps NAT and lets every port be reached directly.
	// On the machine only: between emulated hosts the lab's bridge is
	// routed already.
	Routed         Network = "routed"
	NATUnprotected Network = "nat-unprotected"
	None           Network = "none" // a namespace with loopback only, wired from outside
)

// Networks are the levels the network factor accepts, in the order
// messages list them.
var Networks = []Network{Host, Loopback, Bridge, BridgeDefault, Macvlan, OVS, Overlay, OverlayEncrypted, Ingress, Pod, Service, NodePort, Published, PublishedProxy, Routed, NATUnprotected}

// Valid reports whether n is a level of the network factor.
func (n Network) Valid() bool { return slices.Contains(Networks, n) }

// NeedsHosts reports whether the mode exists only between emulated hosts
// (an overlay joins hosts: it needs two or more).
func (n Network) NeedsHosts() bool { return n == Overlay || n == OverlayEncrypted }

// TakesLinks reports whether the network lab takes an instance's own link
// (a virtual machine's tap) as a port of mode n, on the machine or, with
// betweenHosts, on an emulated host: Open vSwitch's bridge, on the machine
// or a host (any link can be its port), and an emulated host's bridge
// (the link moves into the host's namespace). On the machine the bridge
// is the platform's own.
func (n Network) TakesLinks(betweenHosts bool) bool {
	return n == OVS || betweenHosts && n == Bridge
}

// MachineOnly reports whether the mode exists only on the machine itself,
// not between emulated hosts.
func (n Network) MachineOnly() bool {
	return n == Macvlan || n == BridgeDefault || n == PublishedProxy || n.GatewayMode() != ""
}

// GatewayMode is the Docker bridge gateway mode the network is ("routed",
// "nat-unprotected"); "" for every other network.
func (n Network) GatewayMode() string {
	if n == Routed || n == NATUnprotected {
		return string(n)
	}
	return ""
}

// Publishes reports whether the mode reaches a server through a port its
// engine publishes on the machine: its client runs on the machine.
func (n Network) Publishes() bool { return n == Published || n == PublishedProxy }

// ClusterOnly reports whether the mode exists only on a cluster platform's
// nodes (a routing mesh, a Kubernetes pod network).
func (n Network) ClusterOnly() bool { return n == Ingress || n == Pod || n.Fronted() }

// Fronted reports whether a client reaches the server through a front its
// platform makes for the server as it starts (a Kubernetes Service or
// NodePort): at the address and port the platform gives once the server
// runs (platform.Publisher), from wherever the client is; the server
// listens on a port named before it starts.
func (n Network) Fronted() bool { return n == Service || n == NodePort }

// HostSided reports whether the mode gives the host (the machine, or an
// emulated host) an address of its own on it, so a host process can talk
// to an instance across it.
func (n Network) HostSided() bool {
	switch n {
	case Bridge, BridgeDefault, Macvlan, OVS, Overlay, OverlayEncrypted, Routed, NATUnprotected:
		return true
	}
	return false
}

// Lab reports whether ctrbench's network lab (netlab) builds the mode
// with hosts emulated hosts (0 or 1: the machine alone): macvlan and Open
// vSwitch on the machine; the bridge, Open vSwitch (a bridge per host),
// the overlays and published ports (a NAT bridge per host) between
// emulated hosts, and their own namespaces (Host) on them.
func (n Network) Lab(hosts int) bool {
	if hosts > 1 {
		return n == Host || n == Bridge || n == OVS || n == Overlay || n == OverlayEncrypted || n == Published
	}
	return n == Macvlan || n == OVS
}

// InfoNotComparable names, after a platform's name and a dot, the
// environment record's key by which the platform says its numbers compare
// with nothing ("vm.not_comparable": a virtual machine under emulation),
// and why; reports mark the rows of cells placed on it.
const InfoNotComparable = "not_comparable"

// Port is a port a server listens on, and its protocol ("tcp" or "udp").
type Port struct {
	Number int
	Proto  string
}

// String is the port as engines key it: "6379/tcp".
func (p Port) String() string { return strconv.Itoa(p.Number) + "/" + p.Proto }

// Probe is how an outsider tells that a server is ready to serve (an
// orchestrator's readiness probe): a TCP connection to Port is accepted,
// or, with Path, an HTTP GET of Path on Port answers with a status below
// 400.
type Probe struct {
	Port int
	Path string
}

// Storage is where a disk workload writes.
type Storage string

// Storage levels.
const (
	Layer  Storage = "layer"  // the platform's own filesystem: a container's writable layer, the host's for a process
	Volume Storage = "volume" // a volume made for the campaign
	Tmpfs  Storage = "tmpfs"  // a tmpfs mount, in memory
)

// Storages are the levels of the storage factor.
var Storages = []Storage{Layer, Volume, Tmpfs}

// LinkPrefix starts the name of every host link (and network namespace)
// ctrbench creates, so that leftovers can be found by name.
const LinkPrefix = "ctb"

// Pinning is how the instances of a multi-pair or multi-instance cell are
// placed on the cores the campaign may use (S4).
type Pinning string

// Pinning levels.
const (
	PinNone     Pinning = "none"           // the scheduler decides
	PinSameCore Pinning = "same-core"      // each pair's roles on one core, pairs round-robin over the cores
	PinSeparate Pinning = "separate-cores" // a pair's roles on different cores
	PinSpread   Pinning = "spread"         // every instance round-robin over the cores
)

// Pinnings are the levels of the pinning factor.
var Pinnings = []Pinning{PinNone, PinSameCore, PinSeparate, PinSpread}

// Phase is a moment in an instance's life that a platform can time.
type Phase string

// Phases, in the order they happen.
const (
	Create Phase = "create" // the hosting entity exists (a container created)
	// A cluster task's, as its orchestrator records them: a node was
	// chosen, the node prepares it (image, networks, container), the
	// container is being started.
	Assigned  Phase = "assigned"
	Preparing Phase = "preparing"
	Starting  Phase = "starting"
	Start     Phase = "start" // its first process runs
	// A nested parent's: its engine answers, the agent image is in it, the
	// child container was created and started.
	DaemonReady Phase = "daemon_ready"
	ImageReady  Phase = "image_ready"
	ChildStart  Phase = "child_start"
	Ready       Phase = "ready"  // the agent announced it is ready (a server listening)
	Exit        Phase = "exit"   // its process ended
	Remove      Phase = "remove" // everything made for it is gone
)

// Phases lists every phase in order.
var Phases = []Phase{Create, Assigned, Preparing, Starting, Start, DaemonReady, ImageReady, ChildStart, Ready, Exit, Remove}

// Doc says when a phase ends, for documentation and reports.
func (p Phase) Doc() string {
	switch p {
	case Create:
		return "until the entity exists (a container created)"
	case Assigned:
		return "until a cluster's orchestrator assigned the task to a node"
	case Preparing:
		return "until the node began preparing it (image, networks, container)"
	case Starting:
		return "until the node began starting its container"
	case Start:
		return "until its first process runs"
	case DaemonReady:
		return "until a nested parent's own engine answers"
	case ImageReady:
		return "until the agent image is in that engine (loaded, or found in the preloaded store)"
	case ChildStart:
		return "until the child container inside it was created and started"
	case Ready:
		return "until the agent's first word"
	case Exit:
		return "until its process ended"
	case Remove:
		return "until everything made for it is gone"
	}
	return ""
}

// Strings turns a list of words into strings, for messages.
func Strings[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
