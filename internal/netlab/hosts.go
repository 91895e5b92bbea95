package netlab

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/delayline"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// handleAt returns a netlink handle whose socket lives in the namespace at
// path; the caller closes it.
func handleAt(path string) (*netlink.Handle, error) {
	var h *netlink.Handle
	err := netns.Do(path, func() error {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", path, err)
	}
	return h, nil
}

// createNS creates a lab namespace, or names the existing one at src
// (netns.Adopt) when src is not "", and records it for Close.
func (l *Lab) createNS(name, src string) (string, error) {
	create := netns.Create
	if src != "" {
		create = func(name string) (string, error) { return netns.Adopt(name, src) }
	}
	path, err := create(name)
	if err != nil {
		return "", fmt.Errorf("netlab: %w", err)
	}
	l.mu.Lock()
	l.namespaces = append(l.namespaces, name)
	l.mu.Unlock()
	return path, nil
}

// quietBridges turns off br_netfilter inside a lab namespace (best effort:
// the sysctls exist only when br_netfilter is loaded). No iptables rules
// live there, so it would only cost time.
func quietBridges(path string) {
	for _, k := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables"} {
		_ = netns.Sysctl(path, "net.bridge."+k, "0")
	}
}

// buildUnderlay creates the switch namespace and bridge and every host.
func (l *Lab) buildUnderlay(ctx context.Context) error {
	swPath, err := l.createNS(l.switchName(), "")
	if err != nil {
		return err
	}
	quietBridges(swPath)
	sw, err := handleAt(swPath)
	if err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	defer sw.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: l.switchName()}}
	if err := sw.LinkAdd(br); err != nil {
		return fmt.Errorf("netlab: creating underlay bridge %s: %w", br.Name, err)
	}
	if err := sw.LinkSetUp(br); err != nil {
		return fmt.Errorf("netlab: bringing up %s: %w", br.Name, err)
	}
	for h := 1; h <= l.hosts; h++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("netlab: building hosts: %w", err)
		}
		if err := l.buildHost(sw, br, h); err != nil {
			return err
		}
	}
	rate := "unlimited"
	if l.rate > 0 {
		rate = l.cfg.UnderlayRate.String()
	}
	l.setInfo("hosts", strconv.Itoa(l.hosts))
	l.setInfo("underlay.rate", rate)
	l.setInfo("underlay.switch", "linux bridge in netns "+l.switchName())
	l.notef("%d emulated hosts on underlay %s (%s, rate %s)", l.hosts, l.switchName(), l.pool.Block(subnets.Underlay), rate)
	return nil
}

// buildHost makes host h's namespace, or adopts the one given for it
// (Config.HostNamespaces), and plugs it into the switch.
func (l *Lab) buildHost(sw *netlink.Handle, br netlink.Link, h int) error {
	var src string
	if h <= len(l.cfg.HostNamespaces) {
		src = l.cfg.HostNamespaces[h-1]
	}
	path, err := l.createNS(l.hostNSName(h), src)
	if err != nil {
		return err
	}
	quietBridges(path)
	if err := netns.Sysctl(path, "net.ipv4.ip_forward", "1"); err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	nsf, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	defer nsf.Close()
	hh, err := handleAt(path)
	if err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	defer hh.Close()

	ip := net.ParseIP(l.underlayAddr(h)).To4()
	port := l.name("u", h)
	master := br.Attrs().Index
	if l.cfg.DelayLine {
		master = 0 // the delay line carries the port's frames to the bridge
	}
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: port, MasterIndex: master},
		PeerName:         ifUnderlay,
		PeerNamespace:    netlink.NsFd(int(nsf.Fd())),
		PeerHardwareAddr: macFor(ip),
	}
	if err := sw.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: host %d: creating underlay veth %s: %w", h, port, err)
	}
	if err := sw.LinkSetUp(veth); err != nil {
		return fmt.Errorf("netlab: host %d: bringing up %s: %w", h, port, err)
	}
	if err := setUp(hh, "lo", nil); err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	ul, err := hh.LinkByName(ifUnderlay)
	if err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	if err := setUp(hh, ifUnderlay, &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}); err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	if l.rate > 0 {
		if err := addTbf(hh, ul, l.rate); err != nil {
			return fmt.Errorf("netlab: host %d: shaping %s to %s: %w", h, ifUnderlay, l.cfg.UnderlayRate, err)
		}
	}
	if l.cfg.DelayLine {
		return l.buildDelayLine(sw, br, h, port)
	}
	return nil
}

// buildDelayLine joins host h's port to the switch through a delay line:
// a veth pair in the switch's namespace, one end a bridge port, the
// other the line's switch side, the host's port its host side.
func (l *Lab) buildDelayLine(sw *netlink.Handle, br netlink.Link, h int, port string) error {
	in, out := l.name("d", h), l.name("e", h)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: in}, PeerName: out}
	if err := sw.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: host %d: creating the delay line's veth %s: %w", h, in, err)
	}
	peer, err := sw.LinkByName(out)
	if err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	if err := sw.LinkSetMaster(peer, br); err != nil {
		return fmt.Errorf("netlab: host %d: plugging %s into the switch: %w", h, out, err)
	}
	for _, name := range []string{port, in, out} {
		if err := setUp(sw, name, nil); err != nil {
			return fmt.Errorf("netlab: host %d: %w", h, err)
		}
	}
	ln, err := delayline.Start(netns.RunDir+"/"+l.switchName(), port, in, delayline.Params{}, uint64(h))
	if err != nil {
		return fmt.Errorf("netlab: host %d: %w", h, err)
	}
	l.mu.Lock()
	l.lines = append(l.lines, ln)
	l.mu.Unlock()
	return nil
}

// setUp gives the link an address (if addr is not nil) and brings it up.
func setUp(h *netlink.Handle, name string, addr *net.IPNet) error {
	lk, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("finding %s: %w", name, err)
	}
	if addr != nil {
		if err := h.AddrAdd(lk, &netlink.Addr{IPNet: addr}); err != nil {
			return fmt.Errorf("adding %s to %s: %w", addr, name, err)
		}
	}
	if err := h.LinkSetUp(lk); err != nil {
		return fmt.Errorf("bringing up %s: %w", name, err)
	}
	return nil
}

// addBridge creates a bridge with a fixed MAC (derived from its address, so
// it does not change as ports come and go), an address and an MTU, up.
func addBridge(h *netlink.Handle, name string, addr *net.IPNet, mtu int) (netlink.Link, error) {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu, HardwareAddr: macFor(addr.IP)}}
	if err := h.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("creating bridge %s: %w", name, err)
	}
	if err := setUp(h, name, addr); err != nil {
		return nil, err
	}
	return h.LinkByName(name)
}

// bridgeAddr is address n on host's bridge subnet (pool block host); n 1
// is the host side.
func (l *Lab) bridgeAddr(host, n int) string { return l.pool.IP4(subnets.HostBridge(host), n) }

// underlayAddr is host h's address on the underlay.
func (l *Lab) underlayAddr(h int) string { return l.pool.IP4(subnets.Underlay, h) }

// buildBridge gives every host a routed bridge.
func (l *Lab) buildBridge(ctx context.Context) error {
	for h := 1; h <= l.hosts; h++ {
		if err := l.buildHostBridge(h); err != nil {
			return fmt.Errorf("netlab: bridge mode on host %d: %w", h, err)
		}
	}
	l.notef("bridge mode: ctbbr0 with %s/24 on host 1 (a /24 per host), routed over the underlay", l.bridgeAddr(1, 1))
	return nil
}

func (l *Lab) buildHostBridge(h int) error {
	hh, err := handleAt(l.HostNS(h))
	if err != nil {
		return err
	}
	defer hh.Close()
	addr := &net.IPNet{IP: net.ParseIP(l.bridgeAddr(h, 1)).To4(), Mask: net.CIDRMask(24, 32)}
	if _, err := addBridge(hh, ifBridge, addr, 1500); err != nil {
		return err
	}
	return l.routeHosts(hh, h, func(j int) int { return j })
}

// routeHosts adds, in host h (hh), a route to each other host j's
// pool block third(j) (a /24) through j's underlay address: how the hosts
// reach each other's bridges (the Linux bridge's, OVS's).
func (l *Lab) routeHosts(hh *netlink.Handle, h int, third func(j int) int) error {
	for j := 1; j <= l.hosts; j++ {
		if j == h {
			continue
		}
		dst := &net.IPNet{IP: net.ParseIP(l.pool.IP4(third(j), 0)).To4(), Mask: net.CIDRMask(24, 32)}
		gw := net.ParseIP(l.underlayAddr(j)).To4()
		if err := hh.RouteAdd(&netlink.Route{Dst: dst, Gw: gw}); err != nil {
			return fmt.Errorf("route to %s via %s: %w", dst, gw, err)
		}
	}
	return nil
}

// macFor derives a locally administered unicast MAC from an IPv4 address:
// 02:cb:a.b.c.d. A container that gets an address again gets the same MAC,
// so neighbour caches elsewhere stay right.
func macFor(ip net.IP) net.HardwareAddr {
	v4 := ip.To4()
	return net.HardwareAddr{0x02, 0xcb, v4[0], v4[1], v4[2], v4[3]}
}

// SetUnderlay reshapes every emulated host's underlay egress (an
// unlimited rate removes the shaping, a rate sets a tbf qdisc) and sets
// the delay lines' delay, jitter and loss: half the round trip's delay on
// each host's way out. The runner calls it before each trial on emulated
// hosts.
func (l *Lab) SetUnderlay(u vocab.Underlay) error {
	bps := u.Rate.BytesPerSec()
	l.mu.Lock()
	defer l.mu.Unlock()
	if u.Delays() && len(l.lines) == 0 {
		return fmt.Errorf("netlab: underlay %q delays packets, and this lab was built without delay lines", u)
	}
	for _, ln := range l.lines {
		ln.Set(lineParams(u))
	}
	if len(l.lines) > 0 {
		maps.Copy(l.info, DelayInfo("underlay.", u))
	}
	if bps == l.rate {
		return nil
	}
	for h := 1; h <= l.hosts; h++ {
		if err := shape(l.HostNS(h), ifUnderlay, bps); err != nil {
			return fmt.Errorf("netlab: host %d: shaping the underlay to %q: %w", h, u.Rate.String(), err)
		}
	}
	l.rate = bps
	if bps > 0 {
		l.info["underlay.rate"] = u.Rate.String()
	} else {
		l.info["underlay.rate"] = "unlimited"
	}
	return nil
}

// DelayLines reports what the delay lines did in all, and whether the lab
// has any.
func (l *Lab) DelayLines() (delayline.Stats, bool) {
	l.mu.Lock()
	lines := l.lines
	l.mu.Unlock()
	var all delayline.Stats
	for _, ln := range lines {
		all = all.Plus(ln.Stats())
	}
	return all, len(lines) > 0
}

// lineParams is what a delay line does to one direction of a link with
// underlay u: half its round-trip delay, its jitter and its loss.
func lineParams(u vocab.Underlay) delayline.Params {
	return delayline.Params{Delay: u.Delay / 2, Jitter: u.Jitter, Loss: u.Loss}
}

// DelayInfo is what a campaign's record says of the delay, jitter and
// loss its delay lines give, under keys beginning with prefix.
func DelayInfo(prefix string, u vocab.Underlay) map[string]string {
	return map[string]string{
		prefix + "delay":  u.Delay.String(),
		prefix + "jitter": u.Jitter.String(),
		prefix + "loss":   strconv.FormatFloat(u.Loss*100, 'g', -1, 64) + "%",
	}
}

// EgressRateText is what a campaign's record says of a rate ShapeEgress
// set on each node's egress.
func EgressRateText(rate vocab.Rate) string {
	if rate.Unlimited() {
		return "unlimited"
	}
	return rate.String() + " (tbf on each node's egress)"
}

// ShapeEgress shapes the egress of interface ifname in the namespace at
// nsPath as the underlay is shaped: an unlimited rate removes the
// shaping, a rate ("1gbit") sets a tbf qdisc. An emulated swarm's nodes
// are shaped with it (their own namespaces' eth0).
func ShapeEgress(nsPath, ifname string, rate vocab.Rate) error {
	return shape(nsPath, ifname, rate.BytesPerSec())
}

// shape replaces the tbf at the root of ifname's egress in the namespace
// at nsPath by one at bps (none when 0).
func shape(nsPath, ifname string, bps uint64) error {
	hh, err := handleAt(nsPath)
	if err != nil {
		return err
	}
	defer hh.Close()
	ul, err := hh.LinkByName(ifname)
	if err != nil {
		return err
	}
	qs, _ := hh.QdiscList(ul)
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Type() == "tbf" {
			if err := hh.QdiscDel(q); err != nil {
				return err
			}
		}
	}
	if bps > 0 {
		return addTbf(hh, ul, bps)
	}
	return nil
}

// addTbf shapes link's egress to rate bytes/s with a token bucket: a burst
// of 4 ms at rate (at least 16 KiB; tbf segments GSO packets larger than
// that) and a queue of 50 ms plus the burst.
func addTbf(h *netlink.Handle, link netlink.Link, rate uint64) error {
	burst := max(rate/250, 16<<10)
	limit := rate/20 + burst
	q := &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: link.Attrs().Index,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		},
		Rate:   rate,
		Limit:  uint32(min(limit, 1<<31)),
		Buffer: uint32(min(burst*1_000_000_000/rate/nsPerTick(), 1<<31)),
	}
	return h.QdiscAdd(q)
}

// nsPerTick is the packet scheduler's clock tick in ns (the second field of
// /proc/net/psched; 64 on every kernel since 2.6.31). tbf's buffer is given
// in ticks.
func nsPerTick() uint64 {
	b, err := os.ReadFile("/proc/net/psched")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if v, err := strconv.ParseUint(f[1], 16, 32); err == nil && v > 0 {
				return v
			}
		}
	}
	return 64
}
