package netlab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"

	"github.com/vishvananda/netlink"

	"github.com/ctrbench/ctrbench/internal/netns"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/sys/unix"
)

// overlay describes one of the two VXLAN overlays.
type overlay struct {
	mode   vocab.Network
	vni    int
	bridge string       // bridge in each host
	vxlan  string       // VXLAN device in each host
	pool   subnets.Pool // host h has its overlay block's .1 (subnets.OverlayHost)
	mtu    int
	letter string // container veths in the host are ctb<tok><letter><n>
}

var (
	overlayPlain     = overlay{vocab.Overlay, 4242, "ctbov0", "ctbvx0", subnets.Pool{}, 1450, "o"}
	overlayEncrypted = overlay{vocab.OverlayEncrypted, 4243, "ctbev0", "ctbex0", subnets.Pool{}, 1370, "e"}
)

// vxlanPort is the IANA VXLAN port, used by the plain overlay; the
// encrypted one uses the next port, so each overlay has a socket of its own
// (sharing 4789 delayed first packets of the encrypted overlay by seconds
// now and then: ARP over it timed out after a plain-overlay trial).
const vxlanPort = 4789

func (o overlay) port() int {
	if o.mode == vocab.OverlayEncrypted {
		return vxlanPort + 1
	}
	return vxlanPort
}

func (o overlay) hostIP(h int) net.IP {
	return net.ParseIP(o.pool.IP4(subnets.OverlayHost(o.mode == vocab.OverlayEncrypted, h), 1)).To4()
}

// overlay is template o on the lab's pool.
func (l *Lab) overlay(o overlay) overlay {
	o.pool = l.pool
	return o
}

// vtep is host h's VXLAN endpoint: its underlay address, or its WireGuard
// tunnel address for the encrypted overlay.
func (o overlay) vtep(h int) net.IP {
	if o.mode == vocab.OverlayEncrypted {
		return net.ParseIP(o.pool.IP4(subnets.WireGuard, h)).To4()
	}
	return net.ParseIP(o.pool.IP4(subnets.Underlay, h)).To4()
}

// vtepDev is the device the VXLAN sends through.
func (o overlay) vtepDev() string {
	if o.mode == vocab.OverlayEncrypted {
		return ifWG
	}
	return ifUnderlay
}

// buildOverlay creates the bridge and VXLAN of o in every host.
func (l *Lab) buildOverlay(ctx context.Context, o overlay) error {
	for h := 1; h <= l.hosts; h++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("netlab: %s: %w", o.mode, err)
		}
		if err := l.buildHostOverlay(o, h); err != nil {
			return fmt.Errorf("netlab: %s on host %d: %w", o.mode, h, err)
		}
	}
	l.setInfo(string(o.mode)+".mtu", strconv.Itoa(o.mtu))
	l.setInfo(string(o.mode)+".vni", strconv.Itoa(o.vni))
	l.notef("%s: VXLAN %d over %s, bridge %s, MTU %d", o.mode, o.vni, o.vtepDev(), o.bridge, o.mtu)
	return nil
}

func (l *Lab) buildHostOverlay(o overlay, h int) error {
	hh, err := handleAt(l.HostNS(h))
	if err != nil {
		return err
	}
	defer hh.Close()
	dev, err := hh.LinkByName(o.vtepDev())
	if err != nil {
		return fmt.Errorf("finding %s: %w", o.vtepDev(), err)
	}
	br, err := addBridge(hh, o.bridge, &net.IPNet{IP: o.hostIP(h), Mask: net.CIDRMask(subnets.OverlayBits, 32)}, o.mtu)
	if err != nil {
		return err
	}
	vx := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: o.vxlan, MTU: o.mtu, MasterIndex: br.Attrs().Index},
		VxlanId:      o.vni,
		VtepDevIndex: dev.Attrs().Index,
		SrcAddr:      o.vtep(h),
		Learning:     true,
		Port:         o.port(),
	}
	if err := hh.LinkAdd(vx); err != nil {
		return fmt.Errorf("creating VXLAN %s: %w", o.vxlan, err)
	}
	link, err := hh.LinkByName(o.vxlan)
	if err != nil {
		return err
	}
	// All-zero FDB entries: flood broadcast and unknown unicast to every
	// other host (head-end replication, no multicast needed).
	for j := 1; j <= l.hosts; j++ {
		if j == h {
			continue
		}
		fdb := &netlink.Neigh{
			LinkIndex:    link.Attrs().Index,
			Family:       unix.AF_BRIDGE,
			State:        netlink.NUD_PERMANENT,
			Flags:        netlink.NTF_SELF,
			IP:           o.vtep(j),
			HardwareAddr: net.HardwareAddr{0, 0, 0, 0, 0, 0},
		}
		if err := hh.NeighAppend(fdb); err != nil {
			return fmt.Errorf("FDB entry on %s towards %s: %w", o.vxlan, o.vtep(j), err)
		}
	}
	if err := hh.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing up %s: %w", o.vxlan, err)
	}
	return nil
}

// WireGuardConfig is what the WireGuard agent is started with
// (`ctrbench agent wireguard --config <JSON>`): it creates the TUN device
// Interface itself, gives it Address and MTU, brings it up, and peers with
// every other emulated host.
type WireGuardConfig struct {
	Interface  string          `json:"interface"`   // "ctbwg0"
	MTU        int             `json:"mtu"`         // 1420
	Address    string          `json:"address"`     // CIDR, e.g. "198.18.250.1/24"
	PrivateKey string          `json:"private_key"` // base64, like `wg genkey`
	ListenPort int             `json:"listen_port"` // 51820
	Peers      []WireGuardPeer `json:"peers"`
}

// WireGuardPeer is one peer of a WireGuardConfig.
type WireGuardPeer struct {
	PublicKey           string   `json:"public_key"` // base64, like `wg pubkey`
	Endpoint            string   `json:"endpoint"`   // "198.18.0.<j>:51820"
	AllowedIPs          []string `json:"allowed_ips"`
	PersistentKeepalive int      `json:"persistent_keepalive,omitempty"` // seconds
}

// WireGuard parameters.
const (
	wgPort      = 51820
	wgMTU       = 1420
	wgReadyWait = 5 * time.Second
)

// NewKeyPair returns a WireGuard private key and its public key, base64
// encoded as `wg genkey` and `wg pubkey` print them.
func NewKeyPair() (private, public string, err error) {
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		return "", "", fmt.Errorf("generating a key: %w", err)
	}
	// Clamp as wg genkey does.
	k[0] &= 248
	k[31] = k[31]&127 | 64
	pub, err := curve25519.X25519(k[:], curve25519.Basepoint)
	if err != nil {
		return "", "", fmt.Errorf("deriving the public key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k[:]), base64.StdEncoding.EncodeToString(pub), nil
}

// wireGuardConfigs returns each host's agent configuration (index h-1).
func (l *Lab) wireGuardConfigs() ([]WireGuardConfig, error) {
	priv := make([]string, l.hosts+1)
	pub := make([]string, l.hosts+1)
	for h := 1; h <= l.hosts; h++ {
		var err error
		if priv[h], pub[h], err = NewKeyPair(); err != nil {
			return nil, err
		}
	}
	var cfgs []WireGuardConfig
	for h := 1; h <= l.hosts; h++ {
		c := WireGuardConfig{
			Interface:  ifWG,
			MTU:        wgMTU,
			Address:    l.pool.IP4(subnets.WireGuard, h) + "/24",
			PrivateKey: priv[h],
			ListenPort: wgPort,
		}
		for j := 1; j <= l.hosts; j++ {
			if j == h {
				continue
			}
			c.Peers = append(c.Peers, WireGuardPeer{
				PublicKey: pub[j],
				Endpoint:  net.JoinHostPort(l.underlayAddr(j), strconv.Itoa(wgPort)),
				// Sessions stay up between trials: no trial's first
				// packets wait for a handshake.
				PersistentKeepalive: 10,
				AllowedIPs:          []string{l.pool.IP4(subnets.WireGuard, j) + "/32"},
			})
		}
		cfgs = append(cfgs, c)
	}
	return cfgs, nil
}

// buildEncrypted starts a WireGuard agent in every host, waits for its
// tunnel, then builds the VXLAN overlay over the tunnels.
func (l *Lab) buildEncrypted(ctx context.Context) error {
	cfgs, err := l.wireGuardConfigs()
	if err != nil {
		return fmt.Errorf("netlab: overlay-encrypted: %w", err)
	}
	kind := ""
	for h := 1; h <= l.hosts; h++ {
		js, err := json.Marshal(cfgs[h-1])
		if err != nil {
			return fmt.Errorf("netlab: overlay-encrypted: %w", err)
		}
		stop, err := l.cfg.Spawn(ctx, l.HostNS(h), invocation.WireGuardArgs(js))
		if err != nil {
			return fmt.Errorf("netlab: overlay-encrypted: starting the WireGuard agent on host %d: %w", h, err)
		}
		if stop != nil {
			l.mu.Lock()
			l.stops = append(l.stops, stop)
			l.mu.Unlock()
		}
		if kind, err = waitUp(ctx, l.HostNS(h), ifWG, wgReadyWait); err != nil {
			return fmt.Errorf("netlab: overlay-encrypted: host %d: %w", h, err)
		}
	}
	switch kind {
	case "tuntap":
		l.setInfo("overlay-encrypted.wireguard", "userspace (wireguard-go)")
	case "wireguard":
		l.setInfo("overlay-encrypted.wireguard", "kernel")
	default:
		l.setInfo("overlay-encrypted.wireguard", kind)
	}
	l.notef("overlay-encrypted: WireGuard agents up on %d hosts (%s)", l.hosts, l.info["overlay-encrypted.wireguard"])
	if !l.cfg.skipWarmup {
		if err := l.warmTunnels(ctx); err != nil {
			return fmt.Errorf("netlab: overlay-encrypted: %w", err)
		}
	}
	return l.buildOverlay(ctx, l.overlay(overlayEncrypted))
}

// waitUp polls until the link name exists and is administratively up in
// the namespace at path, and returns its kind ("tuntap", "wireguard").
func waitUp(ctx context.Context, path, name string, timeout time.Duration) (string, error) {
	h, err := handleAt(path)
	if err != nil {
		return "", err
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		lk, err := h.LinkByName(name)
		if err == nil && lk.Attrs().Flags&net.FlagUp != 0 {
			return lk.Type(), nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return "", fmt.Errorf("%s did not appear within %v: %w", name, timeout, err)
			}
			return "", fmt.Errorf("%s is not up after %v", name, timeout)
		case <-tick.C:
		}
	}
}

// warmTunnels sends datagrams through WireGuard between every pair of hosts
// until each arrives, so handshakes are done before the first trial (and a
// tunnel that does not pass traffic fails the lab, not a trial).
func (l *Lab) warmTunnels(ctx context.Context) error {
	const port = 9 // discard; the listener is ours, in the receiving host
	for j := 1; j <= l.hosts; j++ {
		var conn *net.UDPConn
		err := netns.Do(l.HostNS(j), func() error {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.pool.IP4(subnets.WireGuard, j)), Port: port})
			conn = c
			return err
		})
		if err != nil {
			return fmt.Errorf("host %d: listening on its tunnel address: %w", j, err)
		}
		for i := 1; i <= l.hosts; i++ {
			if i == j {
				continue
			}
			if err := l.pingTunnel(ctx, i, j, conn); err != nil {
				conn.Close()
				return err
			}
		}
		conn.Close()
	}
	return nil
}

// pingTunnel sends from host i to host j's tunnel address until conn (in
// host j) receives, for at most 10 seconds.
func (l *Lab) pingTunnel(ctx context.Context, i, j int, conn *net.UDPConn) error {
	var out *net.UDPConn
	err := netns.Do(l.HostNS(i), func() error {
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(l.pool.IP4(subnets.WireGuard, j)), Port: 9})
		out = c
		return err
	})
	if err != nil {
		return fmt.Errorf("host %d: %w", i, err)
	}
	defer out.Close()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 64)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		_, _ = out.Write([]byte("ctrbench warm-up"))
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, _, err := conn.ReadFromUDP(buf); err == nil {
			return nil
		}
	}
	return fmt.Errorf("no traffic through WireGuard from host %d to host %d within 10 s", i, j)
}
