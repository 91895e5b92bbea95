package subnets

import (
	"fmt"
	"net/netip"
)

// The layout of a pool: what each block is. A block is a /24 of the
// pool, numbered from 0; in the default pool block b is 198.18.<b>.0/24
// for b < 256 and 198.19.<b-256>.0/24 above.
//
//	block      size   what
//	0          /24    emulated hosts' underlay: host h is .h
//	h          /24    host h's bridge (bridge between hosts), h = 1..MaxHosts
//	100+h      /24    host h's Open vSwitch bridge (ovs between hosts)
//	150+h      /24    host h's NAT bridge (published between hosts)
//	200        /24    Open vSwitch on the machine
//	201        /24    macvlan on the machine
//	202        /24    LXC's bridge
//	203        /24    the virtual machines' bridge
//	204–239    /24    spare host bridges (a second campaign's LXC or VM bridge)
//	240        /24    a Kubernetes cluster's node network: the machine .1, node n .1+n
//	241        /24    the cluster's Service (ClusterIP) range
//	242–243    /24    spare
//	244        /22    the cluster's pods: node n's pods are block 243+n
//	250        /24    WireGuard tunnels: host h is .h
//	256        /18    overlay between hosts: host h's part is block 256+h
//	320        /18    overlay-encrypted: host h's part is block 320+h
//	384–447    /24    the engines' campaign networks (Docker, podman), one each
//	448        /20    a swarm's address pool (its overlays and ingress)
//	464        /20    the inner engines' own address pool (a swarm node's docker_gwbridge)
//	480        /19    the nested parents' inner bridges, a /26 each
const (
	Underlay         = 0
	HostOVS          = 100
	HostNAT          = 150
	MachineOVS       = 200
	Macvlan          = 201
	LXCBridge        = 202
	VMBridge         = 203
	SpareFirst       = 204
	SpareLast        = 239
	K8sNodes         = 240
	K8sServices      = 241
	K8sPods          = 244
	K8sPodsBits      = 22
	WireGuard        = 250
	Overlay          = 256
	OverlayEncrypted = 320
	OverlayBits      = 18
	EnginesFirst     = 384
	EnginesLast      = 447
	SwarmPool        = 448
	SwarmPoolBits    = 20
	InnerPool        = 464
	InnerPoolBits    = 20
	InnerBridges     = 480
	InnerBridgesBits = 19
	InnerBridgeBits  = 26
)

// MaxHosts is the most emulated hosts a lab can have: host h's bridge is
// block h, below the Open vSwitch bridges' blocks.
const MaxHosts = 99

// MaxOverlayHosts is the most emulated hosts an overlay joins: host h's
// part of the overlay's /18 is its block 256+h (or 320+h).
const MaxOverlayHosts = 1<<(24-OverlayBits) - 1

// InnerBridgeCount is how many nested parents' inner bridges a pool holds
// at once.
const InnerBridgeCount = 1 << (InnerBridgeBits - InnerBridgesBits)

// MaxK8sNodes is the most nodes a Kubernetes cluster on the pool has:
// node n's pods are block K8sPods+n-1, inside the pods' /22.
const MaxK8sNodes = 1 << (24 - K8sPodsBits)

// K8s is the address plan of a Kubernetes cluster ctrbench builds (make
// k8s's test cluster): its node network, Service range and pod range.
type K8s struct {
	Nodes    netip.Prefix // the node network; the machine is its gateway
	Services netip.Prefix // ClusterIPs
	Pods     netip.Prefix // every node's pods (kube-proxy's cluster CIDR)
}

// K8s is the pool's Kubernetes address plan.
func (p Pool) K8s() K8s {
	return K8s{Nodes: p.Block(K8sNodes), Services: p.Block(K8sServices), Pods: p.Net(K8sPods, K8sPodsBits)}
}

// Node is node n's address on the node network (n = 1..MaxK8sNodes).
func (k K8s) Node(n int) netip.Addr {
	k.checkNode(n)
	a := k.Nodes.Masked().Addr().As4()
	a[3] = byte(1 + n)
	return netip.AddrFrom4(a)
}

// NodePods is node n's pod subnet (a /24 of Pods).
func (k K8s) NodePods(n int) netip.Prefix {
	k.checkNode(n)
	a := k.Pods.Masked().Addr().As4()
	a[2] += byte(n - 1)
	return netip.PrefixFrom(netip.AddrFrom4(a), 24)
}

func (k K8s) checkNode(n int) {
	if n < 1 || n > MaxK8sNodes {
		panic(fmt.Sprintf("subnets: no Kubernetes node %d (a pool holds %d)", n, MaxK8sNodes))
	}
}

// HostBridge is host h's bridge subnet's block.
func HostBridge(h int) int { return h }

// EngineNetworks are the blocks a campaign's engine network may take, in
// the order to try them.
func EngineNetworks() []int {
	out := make([]int, 0, EnginesLast-EnginesFirst+1)
	for b := EnginesFirst; b <= EnginesLast; b++ {
		out = append(out, b)
	}
	return out
}

// InnerBridge is nested parent slot k's inner bridge subnet
// (k < InnerBridgeCount).
func (p Pool) InnerBridge(k int) netip.Prefix {
	if k < 0 || k >= InnerBridgeCount {
		panic(fmt.Sprintf("subnets: no inner bridge %d (a pool holds %d)", k, InnerBridgeCount))
	}
	per := 1 << (InnerBridgeBits - 24) // inner bridges per block
	return p.Sub(InnerBridges+k/per, InnerBridgeBits, k%per)
}

// Swarm is the address pool a swarm's manager is given at init.
func (p Pool) Swarm() netip.Prefix { return p.Net(SwarmPool, SwarmPoolBits) }

// SwarmSubnets are the /24s of the swarm's pool, in order: the overlays
// ctrbench makes on a swarm, its own or a user's, take the first free.
func (p Pool) SwarmSubnets() []netip.Prefix {
	var out []netip.Prefix
	for b := SwarmPool; b < SwarmPool+1<<(24-SwarmPoolBits); b++ {
		out = append(out, p.Block(b))
	}
	return out
}

// Inner is the address pool an engine inside a parent, a node or a
// virtual machine is given for the networks it makes itself.
func (p Pool) Inner() netip.Prefix { return p.Net(InnerPool, InnerPoolBits) }

// OverlayNet is an overlay's /18 (encrypted or not).
func (p Pool) OverlayNet(encrypted bool) netip.Prefix {
	return p.Net(overlayBlock(encrypted), OverlayBits)
}

// OverlayHost is host h's block in an overlay.
func OverlayHost(encrypted bool, h int) int { return overlayBlock(encrypted) + h }

func overlayBlock(encrypted bool) int {
	if encrypted {
		return OverlayEncrypted
	}
	return Overlay
}
