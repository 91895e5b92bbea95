// Package netlab builds and tears down the network topologies ctrbench
// measures, with netlink, inside network namespaces it owns. Every
// namespace, link and bridge it creates is named "ctb" + Token (4 hex
// characters, unique per campaign run) + a letter + numbers, at most 15
// characters, so a lab can be removed by name after a crash (Clean). It
// never attaches, addresses or moves an interface it did not create, and all
// addresses are in the campaign's subnet pool (by default 198.18.0.0/15,
// RFC 2544's benchmark range), so no packet can leave the machine.
//
// # Emulated hosts and the underlay
//
// With Config.Hosts = N ≥ 1, host h (1..N, at most 99) is the network
// namespace ctb<tok>h<h>. The hosts share an underlay L2 segment: a Linux
// bridge ctb<tok>u living in its own namespace, the switch namespace
// ctb<tok>u, with one veth per host (switch end ctb<tok>u<h>, host end
// ctbul0 with 198.18.0.<h>/24). The switch has no address and nothing else
// attached. It is kept out of the root namespace on purpose: with Docker
// running, br_netfilter hands bridged packets to the root namespace's
// iptables FORWARD chain, whose policy Docker sets to DROP, and the underlay
// would be cut. Each host has lo up and ip_forward=1. With
// Config.UnderlayRate, ctbul0's egress in every host has a tbf qdisc, so each
// direction is shaped by its sender.
//
// # Address plan
//
// Every address comes from the campaign's subnet pool (Config.Pool, a /15;
// by default 198.18.0.0/15, RFC 2544's benchmark range), laid out by
// package subnets. In the default pool:
//
//	198.18.0.0/24      underlay: host h is 198.18.0.<h>
//	198.18.<h>.0/24    bridge mode on host h (h = 1..99): the host is .1
//	198.18.<100+h>/24  ovs on host h (h ≤ 49)
//	198.18.<150+h>/24  published on host h (h ≤ 49)
//	198.18.200.0/24    ovs, on the machine: the machine is .1
//	198.18.201.0/24    macvlan, on the machine: the machine is .1
//	198.18.202.0/24    LXC's bridge (platform lxc, package hostbridge): the machine is .1
//	198.18.203.0/24    virtual machines' bridge (platform vm): the machine is .1
//	198.18.250.0/24    WireGuard tunnels: host h is 198.18.250.<h>
//	198.19.0.0/18      overlay: host h is 198.19.<h>.1, its containers 198.19.<h>.<n> (h ≤ 63)
//	198.19.64.0/18     overlay-encrypted: host h is 198.19.<64+h>.1, containers 198.19.<64+h>.<n>
//
// Containers get n = 2..254 in their host's part of a network, the lowest
// free one; an address freed by Detach is given out again.
//
// # Modes
//
// A campaign may build several modes at once; each is independent.
//
//	mode               where             HostAddr          container address      MTU
//	host               hosts, machine    198.18.0.<h>      (none)                 1500
//	bridge             hosts             198.18.<h>.1      198.18.<h>.<n>/24      1500
//	overlay            hosts (N ≥ 2)     198.19.<h>.1      198.19.<h>.<n>/18      1450
//	overlay-encrypted  hosts (N ≥ 2)     198.19.<64+h>.1   198.19.<64+h>.<n>/18   1370
//	ovs                machine (host 0)  198.18.200.1      198.18.200.<n>/24      1500
//	macvlan            machine (host 0)  198.18.201.1      198.18.201.<n>/24      1500
//
// In host mode there is nothing to attach: a process runs in the host's
// namespace (HostNS), or on the machine itself for host 0, where HostAddr is
// 127.0.0.1.
//
// Bridge is routed, like Docker's bridge without NAT: host h has a bridge
// ctbbr0 and routes 198.18.<j>.0/24 via 198.18.0.<j> for every other host j;
// containers get a default route via 198.18.<h>.1.
//
// Overlay is one L2 segment across hosts: in each host a bridge ctbov0 and a
// VXLAN ctbvx0 (VNI 4242, UDP 4789, local 198.18.0.<h>, learning) enslaved
// to it, with all-zero FDB entries towards every other host's underlay
// address, so broadcasts reach every peer.
//
// Overlay-encrypted is the same over WireGuard: a user-space WireGuard agent
// (started through Config.Spawn) owns the TUN device ctbwg0 with
// 198.18.250.<h>/24 in each host, peers with every other host over the
// underlay (UDP 51820, keepalive every 10 s), and the VXLAN ctbex0 (VNI
// 4243, UDP 4790, bridge ctbev0) uses the tunnel addresses as its
// endpoints, so every overlay packet is encrypted. The lab sends datagrams
// through every tunnel before it is ready, so handshakes are done and a
// tunnel that passes nothing fails the lab, not a trial.
//
// OVS and macvlan live in the machine's root namespace. OVS is a bridge
// ctb<tok>s whose internal port carries 198.18.200.1; it uses the kernel
// datapath when the openvswitch module is loaded and the userspace (netdev)
// one otherwise, starting Open vSwitch if it is not running. Containers are
// veth pairs ctb<tok>s<k> (k = n-1) with checksum offload off on both ends
// (the netdev datapath does not complete partial checksums, and TCP would
// hang). The netdev datapath adds a device of its own, ovs-netdev, which
// Open vSwitch removes with its last bridge.
// Macvlan children hang off ctrbench's own veth pair ctb<tok>m/ctb<tok>n,
// never a real NIC; ctb<tok>mh is the machine's own child, as a host cannot
// talk to its macvlan children through the parent.
//
// Attach wires a container's empty namespace into a mode: the interface
// inside is ctb0, its MAC is derived from its address (so a reused address
// never meets a stale neighbour entry), and Detach removes it. In an
// emulated host the other veth end is ctb<tok>b<n> (bridge), ctb<tok>o<n>
// (overlay) or ctb<tok>e<n> (overlay-encrypted).
package netlab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ctrbench/ctrbench/internal/vocab"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/delayline"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/subnets"
)

// MaxHosts is the most emulated hosts a lab can have (host h's bridge is
// its pool's block h, below the machine-wide subnets).
const MaxHosts = subnets.MaxHosts

// maxHostsPer is the most emulated hosts the modes with a /24 per host
// above the hosts' bridges take (Open vSwitch between hosts at block
// 100+h, published at 150+h, below the machine-wide subnets at 200).
const maxHostsPer = subnets.HostNAT - subnets.HostOVS - 1

// Spawner starts a process running the ctrbench binary with args inside the
// network namespace at netnsPath and returns once it is ready; stop ends it.
// ctx is New's: it bounds the start, not the process's life, which ends
// with stop (Close calls it).
type Spawner func(ctx context.Context, netnsPath string, args []string) (stop func() error, err error)

// Config says what to build.
type Config struct {
	Token        string          // 4 hex chars, unique per campaign run; part of every name
	Pool         subnets.Pool    // every address the lab configures; zero: subnets.Default
	Hosts        int             // emulated hosts; 0 means none (only the root-namespace modes)
	Modes        []vocab.Network // modes to build; each is independent
	UnderlayRate vocab.Rate      // the zero Rate is unlimited, else tbf on each host's underlay egress
	// DelayLine puts a delay line (delayline) between each host and the
	// switch, so SetUnderlay can delay, jitter and lose packets.
	DelayLine bool
	Spawn     Spawner // starts the WireGuard agent; needed only for overlay-encrypted
	// HostNamespaces are existing network namespaces (paths such as
	// /proc/<pid>/ns/net), host h's at h-1, that the lab adopts as the
	// hosts' own instead of creating them: a platform that shares a
	// namespace only by holding it (Docker's container:<id>) holds them,
	// and its instances then share the hosts' namespaces. Close still
	// deletes them, killing what runs in them.
	HostNamespaces []string
	// skipWarmup: tests whose stand-in WireGuard agent passes no traffic.
	skipWarmup bool
	Progress   io.Writer // one-line human notes, may be nil
}

// Attachment is a container's interface on a lab network.
type Attachment struct {
	IP     string // the container's address, without prefix length
	Prefix int    // its prefix length (Plug)
	// Gateway is the host's address on the network (Plug: the instance's
	// default route, which it configures itself).
	Gateway string
	Iface   string       // interface name inside the container
	MTU     int          // its MTU
	Detach  func() error // removes what Attach made; safe twice, fine if the namespace died
}

// Lab is a built topology. Its methods are safe for concurrent use.
type Lab struct {
	cfg   Config
	pool  subnets.Pool
	tok   string
	hosts int
	modes map[vocab.Network]bool
	rate  uint64 // underlay rate in bytes/s, 0 = unlimited

	mu         sync.Mutex
	closed     bool
	attaching  sync.WaitGroup // Attach calls in flight; Close waits for them
	namespaces []string       // namespace names this lab created
	stops      []func() error // WireGuard agents
	ovsBridge  string         // set once the OVS bridge exists
	// ovsHostBridges are the hosts' own OVS bridges (OVS with hosts ≥ 2).
	ovsHostBridges []string
	lines          []*delayline.Line // each host's delay line (Config.DelayLine), host h at h-1
	info           map[string]string
	inUse          map[slot]map[int]bool // allocated last address octets
	published      map[int]map[int]bool  // ports published on each host (Publish)
}

// slot is one mode's network on one host.
type slot struct {
	mode vocab.Network
	host int
}

var tokenRE = regexp.MustCompile(`^[0-9a-f]{4}$`)

// NewToken returns a random token for Config.Token.
func NewToken() (string, error) {
	b := make([]byte, 2)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// New builds everything cfg asks for. On error it removes what it made.
func New(ctx context.Context, cfg Config) (*Lab, error) {
	l := &Lab{
		cfg:       cfg,
		pool:      cfg.Pool.OrDefault(),
		tok:       cfg.Token,
		hosts:     cfg.Hosts,
		modes:     map[vocab.Network]bool{},
		info:      map[string]string{},
		inUse:     map[slot]map[int]bool{},
		published: map[int]map[int]bool{},
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	if err := l.build(ctx); err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the partial lab: %w", cerr))
		}
		return nil, err
	}
	return l, nil
}

func (l *Lab) validate() error {
	if !tokenRE.MatchString(l.tok) {
		return fmt.Errorf("netlab: token %q must be 4 lowercase hex characters", l.tok)
	}
	if l.hosts < 0 || l.hosts > MaxHosts {
		return fmt.Errorf("netlab: %d hosts: must be 0..%d", l.hosts, MaxHosts)
	}
	if len(l.cfg.HostNamespaces) > l.hosts {
		return fmt.Errorf("netlab: %d namespaces to adopt for %d hosts", len(l.cfg.HostNamespaces), l.hosts)
	}
	for _, m := range l.cfg.Modes {
		switch m {
		case vocab.Host, vocab.Macvlan:
		case vocab.OVS:
			if err := l.fits(m); err != nil {
				return err
			}
		case vocab.Bridge:
			if l.hosts < 1 {
				return errors.New("netlab: bridge mode needs emulated hosts (Hosts ≥ 1)")
			}
		case vocab.Overlay, vocab.OverlayEncrypted, vocab.Published:
			if l.hosts < 2 {
				return fmt.Errorf("netlab: %s needs at least 2 emulated hosts", m)
			}
			if err := l.fits(m); err != nil {
				return err
			}
			if m == vocab.OverlayEncrypted && l.cfg.Spawn == nil {
				return errors.New("netlab: overlay-encrypted needs Config.Spawn to start the WireGuard agent")
			}
		default:
			return fmt.Errorf("netlab: unknown mode %q", m)
		}
		l.modes[m] = true
	}
	if !l.cfg.UnderlayRate.Unlimited() {
		if l.hosts < 1 {
			return errors.New("netlab: UnderlayRate needs emulated hosts (Hosts ≥ 1)")
		}
		l.rate = l.cfg.UnderlayRate.BytesPerSec()
	}
	return nil
}

// fits says whether mode m's subnets hold the lab's hosts: an overlay's
// /18 holds subnets.MaxOverlayHosts, a mode with a /24 per host above the
// hosts' bridges maxHostsPer.
func (l *Lab) fits(m vocab.Network) error {
	most := maxHostsPer
	if m == vocab.Overlay || m == vocab.OverlayEncrypted {
		most = subnets.MaxOverlayHosts
	}
	if l.hosts > most {
		return fmt.Errorf("netlab: %s joins at most %d emulated hosts (hosts %d): its subnets hold no more", m, most, l.hosts)
	}
	return nil
}

// build creates the underlay then each mode, in a fixed order.
func (l *Lab) build(ctx context.Context) error {
	if l.hosts > 0 {
		if err := l.buildUnderlay(ctx); err != nil {
			return err
		}
	}
	steps := []struct {
		mode  vocab.Network
		build func(context.Context) error
	}{
		{vocab.Bridge, l.buildBridge},
		{vocab.Overlay, func(ctx context.Context) error { return l.buildOverlay(ctx, l.overlay(overlayPlain)) }},
		{vocab.OverlayEncrypted, l.buildEncrypted},
		{vocab.OVS, l.buildOVS},
		{vocab.OVS, func(ctx context.Context) error {
			if l.hosts < 2 {
				return nil
			}
			return l.buildOVSHosts(ctx)
		}},
		{vocab.Macvlan, l.buildMacvlan},
		{vocab.Published, l.buildNAT},
	}
	for _, s := range steps {
		if !l.modes[s.mode] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("netlab: building %s: %w", s.mode, err)
		}
		if err := s.build(ctx); err != nil {
			return err
		}
	}
	return nil
}

// HostNS returns the path of emulated host's network namespace (1-based),
// or "" if there is no such host.
func (l *Lab) HostNS(host int) string {
	if host < 1 || host > l.hosts {
		return ""
	}
	return netns.RunDir + "/" + l.hostNSName(host)
}

// HostAddr returns the address the namespace of host (0 = the machine's root
// namespace, ≥1 = emulated host) has on mode's network: what a server
// running there binds and a client targets. It is "" if there is none. On
// the machine itself, host mode is loopback.
func (l *Lab) HostAddr(mode vocab.Network, host int) string {
	if l.check(mode, host) != nil {
		return ""
	}
	switch mode {
	case vocab.Host:
		if host == 0 {
			return "127.0.0.1"
		}
		return l.underlayAddr(host)
	case vocab.Bridge:
		return l.bridgeAddr(host, 1)
	case vocab.Overlay:
		return l.overlay(overlayPlain).hostIP(host).String()
	case vocab.OverlayEncrypted:
		return l.overlay(overlayEncrypted).hostIP(host).String()
	case vocab.OVS:
		return l.ovsAddr(host, 1)
	case vocab.Published:
		// Its bridge is routed to from no other host: a host is reached
		// at its underlay address, through the masquerade.
		return l.underlayAddr(host)
	case vocab.Macvlan:
		return l.macvlanHostIP()
	}
	return ""
}

// check says whether mode exists on host in this lab.
func (l *Lab) check(mode vocab.Network, host int) error {
	if host < 0 || host > l.hosts {
		return fmt.Errorf("netlab: no host %d (the lab has %d emulated hosts)", host, l.hosts)
	}
	switch {
	case mode == vocab.Host:
		return nil // the underlay (or loopback) is always there
	case host == 0 && !mode.Lab(1) && mode.Lab(2):
		return fmt.Errorf("netlab: %s needs emulated hosts (host ≥ 1), not the machine itself", mode)
	case host > 0 && !mode.Lab(2):
		return fmt.Errorf("netlab: %s is only on the machine itself (host 0)", mode)
	case host > 0 && mode == vocab.OVS && l.hosts < 2:
		return fmt.Errorf("netlab: %s between emulated hosts needs two or more (the lab has %d)", mode, l.hosts)
	case !mode.Lab(1) && !mode.Lab(2):
		return fmt.Errorf("netlab: unknown mode %q", mode)
	}
	if !l.modes[mode] {
		return fmt.Errorf("netlab: mode %s was not built (Config.Modes)", mode)
	}
	return nil
}

// Info returns what was really used, e.g. "ovs.datapath": "netdev".
func (l *Lab) Info() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.info)
}

func (l *Lab) setInfo(k, v string) {
	l.mu.Lock()
	l.info[k] = v
	l.mu.Unlock()
}

// notef writes a one-line note to Config.Progress.
func (l *Lab) notef(format string, args ...any) {
	if l.cfg.Progress != nil {
		fmt.Fprintf(l.cfg.Progress, "netlab: "+format+"\n", args...)
	}
}

// Close removes everything the lab made and stops Open vSwitch if the lab
// started it and no bridge is left. It is idempotent.
func (l *Lab) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.attaching.Wait() // an Attach that got an address finishes (or fails) first
	l.mu.Lock()
	stops := l.stops
	l.stops = nil
	ovsBridge := l.ovsBridge
	l.ovsBridge = ""
	ovsBridges := l.ovsHostBridges
	l.ovsHostBridges = nil
	if ovsBridge != "" {
		ovsBridges = append(ovsBridges, ovsBridge)
	}
	namespaces := l.namespaces
	l.namespaces = nil
	lines := l.lines
	l.lines = nil
	l.mu.Unlock()

	var errs []error
	for h, ln := range lines {
		if err := ln.Close(); err != nil {
			errs = append(errs, fmt.Errorf("host %d's delay line: %w", h+1, err))
		}
	}
	for _, stop := range stops {
		if err := stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the WireGuard agent: %w", err))
		}
	}
	// If Open vSwitch is down (stopped by Clean, say), its bridge is gone
	// from its point of view; a leftover tap is removed with the links.
	if len(ovsBridges) > 0 && ovsDBUp() {
		for _, br := range ovsBridges {
			if err := ovsDelBridge(context.Background(), br); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := links.RemoveMatching(rootLinkRE(l.tok).MatchString); err != nil {
		errs = append(errs, err)
	}
	// Hosts first, the switch last: deleting a namespace destroys its
	// devices, and with them the peers in other namespaces.
	slices.Reverse(namespaces)
	for _, name := range namespaces {
		if err := netns.Delete(name); err != nil {
			errs = append(errs, err)
		}
	}
	if len(ovsBridges) > 0 {
		if stopped, err := maybeStopOVS(context.Background()); err != nil {
			errs = append(errs, err)
		} else if stopped {
			l.notef("stopped Open vSwitch (no bridge left)")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("netlab: closing lab %s: %w", l.tok, err)
	}
	return nil
}

// Names. Everything in the root or switch namespace carries the token;
// inside a host namespace the fixed names below are unique already.
const (
	ifUnderlay = "ctbul0" // host's underlay interface
	ifBridge   = "ctbbr0" // bridge mode's bridge in each host
	ifWG       = "ctbwg0" // WireGuard TUN in each host
)

func (l *Lab) name(letter string, n int) string {
	return "ctb" + l.tok + letter + strconv.Itoa(n)
}
func (l *Lab) hostNSName(h int) string { return l.name("h", h) }
func (l *Lab) switchName() string      { return "ctb" + l.tok + "u" }

// rootLinkRE matches the root-namespace links netlab makes for tok ("" for
// any token): the OVS bridge's internal port and container veths
// (s, s<k>, p<k>), the hosts' OVS bridges, uplinks and container veths
// (o<h>, q<h>, r<h>, s<h>x<n>, p<h>x<n>), and the macvlan parent pair and
// host child (m, n, mh).
func rootLinkRE(tok string) *regexp.Regexp {
	t := regexp.QuoteMeta(tok)
	if tok == "" {
		t = "[0-9a-f]{4}"
	}
	return regexp.MustCompile(`^ctb` + t + `(s[0-9]*|p[0-9]+|[oqr][0-9]+|[sp][0-9]+x[0-9]+|m|n|mh)$`)
}

// Clean removes what crashed labs left behind: every namespace
// /run/netns/ctb* (killing the processes in it), every OVS bridge named ctb*
// (if ovs-vsctl answers), and the root-namespace links netlab makes. It also
// stops Open vSwitch if a lab started it and no bridge is left; and the
// pairs of delay lines spliced into a cluster's node links (Splice). It returns
// what it removed. Clean removes other running labs too.
func Clean() ([]string, error) {
	every := rootLinkRE("")
	return clean("ctb", "ctb", regexp.MustCompile(every.String()+"|"+spliceRE.String()))
}

// clean is Clean limited to namespaces and OVS bridges whose names start
// with nsPrefix and brPrefix and root links matching linkRE.
func clean(nsPrefix, brPrefix string, linkRE *regexp.Regexp) ([]string, error) {
	var removed []string
	var errs []error
	names, err := netns.List(nsPrefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range names {
		if err := netns.Delete(n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "netns "+n)
	}
	ctx := context.Background()
	if ovsDBUp() {
		brs, err := ovsListBridges(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		for _, br := range brs {
			if len(br) < len(brPrefix) || br[:len(brPrefix)] != brPrefix {
				continue
			}
			if err := ovsDelBridge(ctx, br); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, "ovs-bridge "+br)
		}
		if stopped, err := maybeStopOVS(ctx); err != nil {
			errs = append(errs, err)
		} else if stopped {
			removed = append(removed, "openvswitch daemons")
		}
	}
	gone, err := links.RemoveMatching(linkRE.MatchString)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range gone {
		removed = append(removed, "link "+n)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("netlab: clean: %w", err)
	}
	return removed, nil
}

// isNotFound reports whether err means a link, address or namespace is
// already gone.
func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV) || errors.Is(err, os.ErrNotExist) ||
		errors.Is(err, unix.ESRCH)
}

func ip4(a, b, c, d int) string { return net.IPv4(byte(a), byte(b), byte(c), byte(d)).String() }

// Intact says whether what the lab made is still there: every network
// namespace it created is still mounted (a namespace deleted from
// outside lives on while processes are in it, then goes, and the next
// trial could not enter it). nil when intact.
func (l *Lab) Intact() error {
	l.mu.Lock()
	names := slices.Clone(l.namespaces)
	l.mu.Unlock()
	var gone []string
	for _, n := range names {
		if _, err := os.Stat(netns.RunDir + "/" + n); err != nil {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		return fmt.Errorf("network namespace(s) %s of the lab are gone (deleted from outside?)", strings.Join(gone, ", "))
	}
	return nil
}

// Config is what the lab was built from (New builds a like one).
func (l *Lab) Config() Config { return l.cfg }
