package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"

	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Open vSwitch between emulated hosts (S1 Exp 5's OVS across two hosts):
// each host gets an OVS bridge of its own (ctb<tok>o<h>, in the one
// ovs-vswitchd, whatever its datapath), joined to the host's namespace by
// an uplink veth (ctb<tok>q<h> on the bridge, ifOVS inside the host, with
// 198.18.<100+h>.1/24), and the hosts route each other's OVS subnets over
// the underlay, as bridge mode routes its bridges'. A container on host h
// is a veth on host h's bridge (ctb<tok>s<h>x<n>, 198.18.<100+h>.<n>,
// its gateway the host's uplink address): its traffic to another host
// crosses its OVS bridge, its host's namespace, the underlay, the other
// host's namespace and that host's OVS bridge.

// ifOVS is the OVS uplink inside each host.
const ifOVS = "ctbos0"

// ovsAddr is address n on the OVS subnet of host (0: the machine's
// bridge, 198.18.200.0/24; h: host h's, 198.18.<100+h>.0/24); n 1 is the
// host side.
func (l *Lab) ovsAddr(host, n int) string {
	if host > 0 {
		return l.pool.IP4(subnets.HostOVS+host, n)
	}
	return l.pool.IP4(subnets.MachineOVS, n)
}

// ovsHostAddr is host h's address on its OVS bridge.
func (l *Lab) ovsHostAddr(h int) net.IP { return net.ParseIP(l.ovsAddr(h, 1)).To4() }

func (l *Lab) ovsHostBridge(h int) string { return l.name("o", h) }

// buildOVSHosts makes each host's OVS bridge and uplink, and the routes
// between the hosts' OVS subnets; Open vSwitch runs (buildOVS started it).
func (l *Lab) buildOVSHosts(ctx context.Context) error {
	datapath := l.Info()["ovs.datapath"]
	for h := 1; h <= l.hosts; h++ {
		br := l.ovsHostBridge(h)
		l.mu.Lock()
		l.ovsHostBridges = append(l.ovsHostBridges, br) // from here on Close deletes it
		l.mu.Unlock()
		if _, err := ovsVsctl(ctx, ovsTimeout, "add-br", br, "--", "set", "bridge", br, "datapath_type="+datapath); err != nil {
			return fmt.Errorf("netlab: ovs on host %d: %w", h, err)
		}
		addr := &net.IPNet{IP: l.ovsHostAddr(h), Mask: net.CIDRMask(24, 32)}
		if err := l.plugOVS(ctx, br, l.name("q", h), l.name("r", h), l.HostNS(h), ifOVS, addr, nil); err != nil {
			return fmt.Errorf("netlab: ovs on host %d: uplink: %w", h, err)
		}
		hh, err := handleAt(l.HostNS(h))
		if err != nil {
			return err
		}
		err = l.routeHosts(hh, h, func(j int) int { return subnets.HostOVS + j })
		hh.Close()
		if err != nil {
			return fmt.Errorf("netlab: ovs on host %d: %w", h, err)
		}
	}
	l.notef("ovs between hosts: a bridge per host (ctb%so<h>) with %s/24 on host 1 (a /24 per host), routed over the underlay", l.tok, l.ovsAddr(1, 1))
	return nil
}

// plugOVS makes a veth whose end port is a port of OVS bridge br and
// whose other end, made as tmp, goes into the namespace at nsPath as
// ifname with addr (and a default route via gw when set): checksum
// offload off on both ends while they are in the root namespace (the
// setting moves with the device; OVS's userspace datapath does not
// compute checksums).
func (l *Lab) plugOVS(ctx context.Context, br, port, tmp, nsPath, ifname string, addr *net.IPNet, gw net.IP) error {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: tmp, PeerHardwareAddr: macFor(addr.IP)}
	if err := rootNL.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating veth %s/%s: %w", port, tmp, err)
	}
	for _, name := range []string{port, tmp} {
		if err := checksumOffloadOff(name); err != nil {
			return err
		}
	}
	nsf, err := os.Open(nsPath)
	if err != nil {
		return err
	}
	defer nsf.Close()
	nh, err := handleAt(nsPath)
	if err != nil {
		return err
	}
	defer nh.Close()
	peer, err := rootNL.LinkByName(tmp)
	if err != nil {
		return fmt.Errorf("finding %s: %w", tmp, err)
	}
	if err := rootNL.LinkSetNsFd(peer, int(nsf.Fd())); err != nil {
		return fmt.Errorf("moving %s into %s: %w", tmp, nsPath, err)
	}
	if peer, err = nh.LinkByName(tmp); err != nil {
		return fmt.Errorf("finding %s in %s: %w", tmp, nsPath, err)
	}
	if err := nh.LinkSetName(peer, ifname); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmp, ifname, err)
	}
	if err := configure(nh, ifname, addr, gw); err != nil {
		return err
	}
	if err := setUp(rootNL, port, nil); err != nil {
		return err
	}
	_, err = ovsVsctl(ctx, ovsTimeout, "add-port", br, port)
	return err
}

// attachOVSHost plugs a container's namespace into host's OVS bridge.
func (l *Lab) attachOVSHost(ctx context.Context, host, n int, netnsPath string) (Attachment, error) {
	br := l.ovsHostBridge(host)
	port, tmp := l.name(fmt.Sprintf("s%dx", host), n), l.name(fmt.Sprintf("p%dx", host), n)
	addr := &net.IPNet{IP: net.ParseIP(l.ovsAddr(host, n)).To4(), Mask: net.CIDRMask(24, 32)}
	remove := l.unplugOVS(br, port, tmp)
	ifname, err := pickIfaceAt(netnsPath)
	if err != nil {
		return Attachment{}, err
	}
	if err := l.plugOVS(ctx, br, port, tmp, netnsPath, ifname, addr, l.ovsHostAddr(host)); err != nil {
		return Attachment{}, errors.Join(err, remove())
	}
	return Attachment{IP: addr.IP.String(), Iface: ifname, MTU: 1500, Detach: l.detacher(vocab.OVS, host, n, remove)}, nil
}

// unplugOVS undoes plugOVS: port leaves its bridge (br, or whichever
// bridge has it when br is ""), unless the lab is closed (Close deleted
// the bridges and may have stopped OVS), and the veth goes — by the root
// end of each name given (a tmp end not yet moved into the namespace is
// one).
func (l *Lab) unplugOVS(br, port string, more ...string) func() error {
	return func() error {
		var errs []error
		if !l.isClosed() {
			args := []string{ovsTimeout, "--if-exists", "del-port"}
			if br != "" {
				args = append(args, br)
			}
			if _, err := ovsVsctl(context.Background(), append(args, port)...); err != nil {
				errs = append(errs, err)
			}
		}
		for _, name := range append([]string{port}, more...) {
			lk, err := rootNL.LinkByName(name)
			if err == nil {
				err = rootNL.LinkDel(lk)
			}
			if err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting %s: %w", name, err))
			}
		}
		return errors.Join(errs...)
	}
}

// pickIfaceAt is pickIface in the namespace at path.
func pickIfaceAt(path string) (string, error) {
	h, err := handleAt(path)
	if err != nil {
		return "", err
	}
	defer h.Close()
	return pickIface(h)
}
