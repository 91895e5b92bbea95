package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// rootNL talks to the root namespace: a zero Handle opens a socket per
// request in the calling thread's namespace, and every thread outside
// netns.Do is in the root namespace. It is safe for concurrent use.
var rootNL = &netlink.Handle{}

// Attach wires a container's namespace (empty, e.g. docker --network none;
// a path like /proc/<pid>/ns/net) into mode's network on host. The
// interface inside is ctb0 (ctb1... if taken). It is safe to call
// concurrently.
func (l *Lab) Attach(ctx context.Context, mode vocab.Network, host int, netnsPath string) (Attachment, error) {
	if err := l.check(mode, host); err != nil {
		return Attachment{}, err
	}
	if mode == vocab.Host {
		return Attachment{}, errors.New("netlab: host mode has nothing to attach: run the process in the host's own namespace (HostNS, or the machine's for host 0)")
	}
	if err := ctx.Err(); err != nil {
		return Attachment{}, fmt.Errorf("netlab: attach: %w", err)
	}
	n, err := l.alloc(mode, host)
	if err != nil {
		return Attachment{}, err
	}
	defer l.attaching.Done()
	var a Attachment
	switch mode {
	case vocab.Bridge, vocab.Overlay, vocab.OverlayEncrypted, vocab.Published:
		a, err = l.attachVeth(mode, host, n, netnsPath)
	case vocab.OVS:
		if host > 0 {
			a, err = l.attachOVSHost(ctx, host, n, netnsPath)
		} else {
			a, err = l.attachOVS(ctx, n, netnsPath)
		}
	case vocab.Macvlan:
		a, err = l.attachMacvlan(n, netnsPath)
	}
	if err != nil {
		l.release(mode, host, n)
		return Attachment{}, fmt.Errorf("netlab: attaching %s to %s on host %d: %w", netnsPath, mode, host, err)
	}
	return a, nil
}

// Plug takes link, a link on the machine made for an instance whose
// network stack is more than a namespace (a virtual machine's tap), as a
// port of mode's network, and reserves the address the instance is to
// configure itself (Attachment's IP, Prefix and Gateway). Where the lab
// takes one is vocab.Network.TakesLinks:
//
//   - Open vSwitch, on the machine or an emulated host (whose OVS bridge
//     is in the machine's namespace too): the bridge takes any link as a
//     port. OVS's userspace datapath computes no checksums, so the
//     instance must offload none (a virtual NIC without checksum offload:
//     a tap's offloads are what its owner sets, where the lab turns a
//     veth's off). Detach removes the port but leaves the link, which is
//     its maker's.
//   - An emulated host's bridge: the link moves into the host's namespace
//     and becomes a port of its bridge, as a container's veth end does;
//     its maker must hold what it needs of it already (a tap's file
//     descriptor: its name means nothing outside the host). Detach deletes
//     it there, where its maker cannot reach it.
func (l *Lab) Plug(ctx context.Context, mode vocab.Network, host int, link string) (Attachment, error) {
	if err := l.check(mode, host); err != nil {
		return Attachment{}, err
	}
	if !mode.TakesLinks(host > 0) {
		return Attachment{}, fmt.Errorf("netlab: %s on host %d takes no instance's own link as a port (Open vSwitch does, and an emulated host's bridge)", mode, host)
	}
	n, err := l.alloc(mode, host)
	if err != nil {
		return Attachment{}, err
	}
	defer l.attaching.Done()
	var a Attachment
	if mode == vocab.Bridge {
		a, err = l.plugHost(host, n, link)
	} else {
		a, err = l.plugOVSPort(ctx, host, n, link)
	}
	if err != nil {
		l.release(mode, host, n)
		return Attachment{}, fmt.Errorf("netlab: plugging %s into %s on host %d: %w", link, mode, host, err)
	}
	return a, nil
}

// plugOVSPort makes link, up, a port of the OVS bridge of host (0: the
// machine's), with the address n on that bridge's subnet reserved for its
// instance.
func (l *Lab) plugOVSPort(ctx context.Context, host, n int, link string) (Attachment, error) {
	br := l.ovsName()
	if host > 0 {
		br = l.ovsHostBridge(host)
	}
	remove := func() error {
		if l.isClosed() {
			return nil // the bridge went with its ports
		}
		_, err := ovsVsctl(context.Background(), ovsTimeout, "--if-exists", "del-port", br, link)
		return err
	}
	err := setUp(rootNL, link, nil)
	if err == nil {
		_, err = ovsVsctl(ctx, ovsTimeout, "add-port", br, link)
	}
	if err != nil {
		return Attachment{}, errors.Join(err, remove())
	}
	return Attachment{IP: l.ovsAddr(host, n), Prefix: 24, Gateway: l.ovsAddr(host, 1), Iface: link, MTU: 1500, Detach: l.detacher(vocab.OVS, host, n, remove)}, nil
}

// plugHost moves link into host's namespace as a port of its bridge, up,
// with the address n on the host's subnet reserved for its instance.
func (l *Lab) plugHost(host, n int, link string) (Attachment, error) {
	hostPath := l.HostNS(host)
	f, hh, err := nsOpen(hostPath)
	if err != nil {
		return Attachment{}, err
	}
	defer f.Close()
	defer hh.Close()
	lk, err := rootNL.LinkByName(link)
	if err != nil {
		return Attachment{}, fmt.Errorf("finding %s: %w", link, err)
	}
	if err := rootNL.LinkSetNsFd(lk, int(f.Fd())); err != nil {
		return Attachment{}, fmt.Errorf("moving %s into the host's namespace: %w", link, err)
	}
	remove := func() error { return deleteIn(hostPath, link) }
	br, err := hh.LinkByName(ifBridge)
	if err == nil {
		lk, err = hh.LinkByName(link)
	}
	if err == nil {
		err = hh.LinkSetMTU(lk, 1500)
	}
	if err == nil {
		err = hh.LinkSetMaster(lk, br)
	}
	if err == nil {
		err = hh.LinkSetUp(lk)
	}
	if err != nil {
		return Attachment{}, errors.Join(err, remove())
	}
	return Attachment{IP: l.bridgeAddr(host, n), Prefix: 24, Gateway: l.bridgeAddr(host, 1), Iface: link, MTU: 1500,
		Detach: l.detacher(vocab.Bridge, host, n, remove)}, nil
}

// deleteIn deletes link in the host namespace at hostPath; a link, or a
// host, already gone (the lab closed: its links went with it) is success.
func deleteIn(hostPath, link string) error {
	h, err := handleAt(hostPath)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	defer h.Close()
	lk, err := h.LinkByName(link)
	if err == nil {
		err = h.LinkDel(lk)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting %s: %w", link, err)
	}
	return nil
}

// alloc reserves the lowest free last octet (2..254) on mode's network on
// host and counts the caller as an Attach in flight.
func (l *Lab) alloc(mode vocab.Network, host int) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("netlab: lab is closed")
	}
	if n, ok := takeLowest(l.inUse, slot{mode, host}, 2, 254); ok {
		l.attaching.Add(1)
		return n, nil
	}
	return 0, fmt.Errorf("netlab: no free address on %s, host %d (253 attached)", mode, host)
}

// takeLowest marks the lowest number from first to last not yet used
// under key and returns it; false when all are. The caller holds l.mu.
func takeLowest[K comparable](used map[K]map[int]bool, key K, first, last int) (int, bool) {
	if used[key] == nil {
		used[key] = map[int]bool{}
	}
	for n := first; n <= last; n++ {
		if !used[key][n] {
			used[key][n] = true
			return n, true
		}
	}
	return 0, false
}

func (l *Lab) release(mode vocab.Network, host, n int) {
	l.mu.Lock()
	delete(l.inUse[slot{mode, host}], n)
	l.mu.Unlock()
}

func (l *Lab) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// detacher makes Attachment.Detach: remove runs until it succeeds once,
// then the address is free again and further calls do nothing.
func (l *Lab) detacher(mode vocab.Network, host, n int, remove func() error) func() error {
	var mu sync.Mutex
	done := false
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return nil
		}
		if err := remove(); err != nil {
			return fmt.Errorf("netlab: detaching from %s on host %d: %w", mode, host, err)
		}
		done = true
		l.release(mode, host, n)
		return nil
	}
}

// pickIface returns the first of ctb0..ctb9 not present in the namespace.
func pickIface(h *netlink.Handle) (string, error) {
	for i := range 10 {
		name := fmt.Sprintf("ctb%d", i)
		if _, err := h.LinkByName(name); err != nil {
			if isNotFound(err) {
				return name, nil
			}
			return "", fmt.Errorf("looking for %s: %w", name, err)
		}
	}
	return "", errors.New("ctb0..ctb9 all exist in the namespace")
}

// configure brings lo and the container's interface up, adds the default
// route (with gw) and only then the address: an agent waiting for its
// address (agent run --wait-net) starts with its routes already in place.
func configure(h *netlink.Handle, ifname string, addr *net.IPNet, gw net.IP) error {
	if err := setUp(h, "lo", nil); err != nil {
		return err
	}
	if err := setUp(h, ifname, nil); err != nil {
		return err
	}
	lk, err := h.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("finding %s: %w", ifname, err)
	}
	if gw != nil {
		// Without an address yet, the gateway is reachable through an
		// on-link host route.
		onLink := &netlink.Route{LinkIndex: lk.Attrs().Index, Dst: &net.IPNet{IP: gw, Mask: net.CIDRMask(32, 32)}, Scope: netlink.SCOPE_LINK}
		if err := h.RouteAdd(onLink); err != nil {
			return fmt.Errorf("route to gateway %s: %w", gw, err)
		}
		if err := h.RouteAdd(&netlink.Route{LinkIndex: lk.Attrs().Index, Gw: gw}); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("default route via %s: the namespace already has one (attached twice?)", gw)
			}
			return fmt.Errorf("default route via %s: %w", gw, err)
		}
	}
	if err := h.AddrAdd(lk, &netlink.Addr{IPNet: addr}); err != nil {
		return fmt.Errorf("adding %s to %s: %w", addr, ifname, err)
	}
	return nil
}

// nsOpen opens a container's namespace file for netlink's
// IFLA_NET_NS_FD and a netlink handle inside it.
func nsOpen(path string) (*os.File, *netlink.Handle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening namespace: %w", err)
	}
	h, err := handleAt(path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, h, nil
}

// attachVeth plugs a veth into the mode's bridge inside an emulated host.
func (l *Lab) attachVeth(mode vocab.Network, host, n int, netnsPath string) (Attachment, error) {
	var (
		brName, letter string
		mtu            int
		addr           *net.IPNet
		gw             net.IP
	)
	switch mode {
	case vocab.Bridge:
		brName, letter, mtu = ifBridge, "b", 1500
		addr = &net.IPNet{IP: net.ParseIP(l.bridgeAddr(host, n)).To4(), Mask: net.CIDRMask(24, 32)}
		gw = net.ParseIP(l.bridgeAddr(host, 1)).To4()
	case vocab.Published:
		brName, letter, mtu = ifNAT, "a", 1500
		addr = &net.IPNet{IP: net.ParseIP(l.natAddr(host, n)).To4(), Mask: net.CIDRMask(24, 32)}
		gw = net.ParseIP(l.natAddr(host, 1)).To4()
	case vocab.Overlay, vocab.OverlayEncrypted:
		o := l.overlay(overlayPlain)
		if mode == vocab.OverlayEncrypted {
			o = l.overlay(overlayEncrypted)
		}
		brName, letter, mtu = o.bridge, o.letter, o.mtu
		addr = &net.IPNet{IP: net.ParseIP(l.pool.IP4(subnets.OverlayHost(o.mode == vocab.OverlayEncrypted, host), n)).To4(), Mask: net.CIDRMask(subnets.OverlayBits, 32)}
	}
	hostPath := l.HostNS(host)
	hh, err := handleAt(hostPath)
	if err != nil {
		return Attachment{}, err
	}
	defer hh.Close()
	cf, ch, err := nsOpen(netnsPath)
	if err != nil {
		return Attachment{}, err
	}
	defer cf.Close()
	defer ch.Close()
	br, err := hh.LinkByName(brName)
	if err != nil {
		return Attachment{}, fmt.Errorf("finding %s: %w", brName, err)
	}
	ifname, err := pickIface(ch)
	if err != nil {
		return Attachment{}, err
	}
	hostEnd := l.name(letter, n)
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: hostEnd, MTU: mtu, MasterIndex: br.Attrs().Index},
		PeerName:         ifname,
		PeerNamespace:    netlink.NsFd(int(cf.Fd())),
		PeerHardwareAddr: macFor(addr.IP),
		PeerMTU:          uint32(mtu),
	}
	if err := hh.LinkAdd(veth); err != nil {
		return Attachment{}, fmt.Errorf("creating veth %s/%s: %w", hostEnd, ifname, err)
	}
	// Deleting the host end takes the container end with it.
	remove := func() error { return deleteIn(hostPath, hostEnd) }
	err = setUp(hh, hostEnd, nil)
	if err == nil {
		err = configure(ch, ifname, addr, gw)
	}
	if err != nil {
		return Attachment{}, errors.Join(err, remove())
	}
	return Attachment{IP: addr.IP.String(), Iface: ifname, MTU: mtu, Detach: l.detacher(mode, host, n, remove)}, nil
}

// attachOVS plugs a veth into the OVS bridge (plugOVS).
func (l *Lab) attachOVS(ctx context.Context, n int, netnsPath string) (Attachment, error) {
	k := n - 1
	hostEnd, tmp := l.name("s", k), l.name("p", k)
	addr := &net.IPNet{IP: net.ParseIP(l.ovsAddr(0, n)).To4(), Mask: net.CIDRMask(24, 32)}
	remove := l.unplugOVS("", hostEnd)
	ifname, err := pickIfaceAt(netnsPath)
	if err != nil {
		return Attachment{}, err
	}
	if err := l.plugOVS(ctx, l.ovsName(), hostEnd, tmp, netnsPath, ifname, addr, l.ovsHostAddr(0)); err != nil {
		return Attachment{}, errors.Join(err, remove())
	}
	return Attachment{IP: addr.IP.String(), Iface: ifname, MTU: 1500, Detach: l.detacher(vocab.OVS, 0, n, remove)}, nil
}

// attachMacvlan creates a macvlan child of the lab's parent directly in the
// container's namespace.
func (l *Lab) attachMacvlan(n int, netnsPath string) (Attachment, error) {
	addr := &net.IPNet{IP: net.ParseIP(l.pool.IP4(subnets.Macvlan, n)).To4(), Mask: net.CIDRMask(24, 32)}
	mac := macFor(addr.IP)
	parent, err := rootNL.LinkByName(l.macvlanParent())
	if err != nil {
		return Attachment{}, fmt.Errorf("finding the macvlan parent: %w", err)
	}
	cf, ch, err := nsOpen(netnsPath)
	if err != nil {
		return Attachment{}, err
	}
	defer cf.Close()
	defer ch.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(cf.Fd()), &st); err != nil {
		return Attachment{}, fmt.Errorf("stat of the namespace: %w", err)
	}
	ifname, err := pickIface(ch)
	if err != nil {
		return Attachment{}, err
	}
	mv := &netlink.Macvlan{
		LinkAttrs: netlink.LinkAttrs{
			Name:         ifname,
			ParentIndex:  parent.Attrs().Index,
			Namespace:    netlink.NsFd(int(cf.Fd())),
			HardwareAddr: mac,
		},
		Mode: netlink.MACVLAN_MODE_BRIDGE,
	}
	if err := rootNL.LinkAdd(mv); err != nil {
		return Attachment{}, fmt.Errorf("creating macvlan %s: %w", ifname, err)
	}
	lk, err := ch.LinkByName(ifname)
	if err != nil {
		return Attachment{}, fmt.Errorf("finding %s in the namespace: %w", ifname, err)
	}
	index := lk.Attrs().Index
	// The child lives in the container's namespace. Find it again only in
	// that same namespace (same inode: /proc/<pid> may be reused), and only
	// if it is still our macvlan.
	remove := func() error {
		f, err := os.Open(netnsPath)
		if err != nil {
			return nil // the namespace died, and the child with it
		}
		defer f.Close()
		var now unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
			return nil
		}
		h, err := handleAt(netnsPath)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		defer h.Close()
		lk, err := h.LinkByIndex(index)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return fmt.Errorf("finding %s: %w", ifname, err)
		}
		if lk.Type() != "macvlan" || !bytes.Equal(lk.Attrs().HardwareAddr, mac) {
			return nil
		}
		if err := h.LinkDel(lk); err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting %s: %w", ifname, err)
		}
		return nil
	}
	if err := configure(ch, ifname, addr, nil); err != nil {
		return Attachment{}, errors.Join(err, remove())
	}
	return Attachment{IP: addr.IP.String(), Iface: ifname, MTU: 1500, Detach: l.detacher(vocab.Macvlan, 0, n, remove)}, nil
}
