// Package links manages host network links ctrbench creates; every one is
// named with vocab.LinkPrefix so leftovers can be found and removed. It
// never touches a link without that prefix.
package links

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// List returns the names of host links named with the ctrbench prefix.
func List() ([]string, error) {
	ls, err := dump(netlink.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var out []string
	for _, l := range ls {
		if name := l.Attrs().Name; strings.HasPrefix(name, vocab.LinkPrefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

// RemoveAll deletes every host link named with the ctrbench prefix, except
// those in keep. It returns the names removed.
func RemoveAll(keep map[string]bool) ([]string, error) {
	return RemoveMatching(func(name string) bool { return !keep[name] })
}

// RemoveMatching deletes the host links named with the ctrbench prefix for
// which match is true, and returns their names.
func RemoveMatching(match func(name string) bool) ([]string, error) {
	ls, err := dump(netlink.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var removed []string
	var errs []string
	for _, l := range ls {
		name := l.Attrs().Name
		if !strings.HasPrefix(name, vocab.LinkPrefix) || !match(name) {
			continue
		}
		// Deleting one end of a veth pair deletes its peer too (and a
		// parent its macvlan children), so a link listed a moment ago may
		// already be gone: that is success.
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		removed = append(removed, name)
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("removing links: %s", strings.Join(errs, "; "))
	}
	return removed, nil
}

// RouteVia routes dst through gw in the machine's namespace, replacing a
// route to dst that is there. Only a route to a subnet ctrbench made (a
// nested parent's inner bridge) through an address on a ctrbench link may
// be given: gw must be reached over a link named with the prefix.
func RouteVia(dst *net.IPNet, gw net.IP) error {
	routes, err := netlink.RouteGet(gw)
	if err != nil || len(routes) == 0 {
		return fmt.Errorf("route to %s via %s: %s is not reachable: %v", dst, gw, gw, err)
	}
	l, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return fmt.Errorf("route to %s via %s: %w", dst, gw, err)
	}
	if name := l.Attrs().Name; !strings.HasPrefix(name, vocab.LinkPrefix) {
		return fmt.Errorf("route to %s via %s: %s is reached over %s, not a link of ctrbench's", dst, gw, gw, name)
	}
	if err := netlink.RouteReplace(&netlink.Route{Dst: dst, Gw: gw, LinkIndex: l.Attrs().Index}); err != nil {
		return fmt.Errorf("route to %s via %s: %w", dst, gw, err)
	}
	return nil
}

// RouteDel removes the route to dst through gw, if it is there.
func RouteDel(dst *net.IPNet, gw net.IP) error {
	err := netlink.RouteDel(&netlink.Route{Dst: dst, Gw: gw})
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("removing route to %s via %s: %w", dst, gw, err)
	}
	return nil
}

// AddBridge creates a Linux bridge link in the machine's namespace with
// the given address, up. Its name must carry the ctrbench prefix.
func AddBridge(name string, addr *net.IPNet) error {
	if !strings.HasPrefix(name, vocab.LinkPrefix) {
		return fmt.Errorf("bridge %s: ctrbench's links are named %s…", name, vocab.LinkPrefix)
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("creating bridge %s: %w", name, err)
	}
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: addr}); err != nil {
		_ = netlink.LinkDel(br)
		return fmt.Errorf("addressing bridge %s: %w", name, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		_ = netlink.LinkDel(br)
		return fmt.Errorf("bridge %s up: %w", name, err)
	}
	return nil
}

// Remove deletes one link of ctrbench's by name; one already gone is
// removed.
func Remove(name string) error {
	if !strings.HasPrefix(name, vocab.LinkPrefix) {
		return fmt.Errorf("link %s is not ctrbench's", name)
	}
	l, err := netlink.LinkByName(name)
	if err != nil {
		return nil
	}
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("removing %s: %w", name, err)
	}
	return nil
}

// OpenTap opens tap name (ctrbench's, made by AddTap) as its user does:
// the file descriptor a virtual machine's NIC takes (QEMU's -netdev
// tap,fd=). It stays the tap's wherever the tap then moves (into an
// emulated host's namespace, where its name means nothing here).
func OpenTap(name string) (*os.File, error) {
	if !strings.HasPrefix(name, vocab.LinkPrefix) {
		return nil, fmt.Errorf("tap %s: ctrbench's links are named %s…", name, vocab.LinkPrefix)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tap %s: opening /dev/net/tun: %w", name, err)
	}
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tap %s: attaching to it: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "tap "+name), nil
}

// LoopbackUp sets the loopback interface up inside the network namespace
// at nsPath, a namespace ctrbench made (a container's, which its runtime
// left with lo down). It changes nothing in the machine's namespace.
func LoopbackUp(nsPath string) error {
	return netns.Do(nsPath, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("loopback in %s: %w", nsPath, err)
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("loopback up in %s: %w", nsPath, err)
		}
		return nil
	})
}

// AddTap creates a persistent tap link (a virtual machine's NIC: QEMU
// opens it by name) in the machine's namespace, plugged into bridge
// master and up; with master "", down and in no bridge, for its user to
// plug in. Its name must carry the ctrbench prefix.
func AddTap(name, master string) error {
	if !strings.HasPrefix(name, vocab.LinkPrefix) {
		return fmt.Errorf("tap %s: ctrbench's links are named %s…", name, vocab.LinkPrefix)
	}
	var br netlink.Link
	if master != "" {
		var err error
		if br, err = netlink.LinkByName(master); err != nil {
			return fmt.Errorf("tap %s: bridge %s: %w", name, master, err)
		}
	}
	tap := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TAP,
		Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR}
	if err := netlink.LinkAdd(tap); err != nil {
		return fmt.Errorf("creating tap %s: %w", name, err)
	}
	if br == nil {
		return nil // its user plugs it in (and sets it up)
	}
	if err := netlink.LinkSetMaster(tap, br); err != nil {
		_ = netlink.LinkDel(tap)
		return fmt.Errorf("tap %s into %s: %w", name, master, err)
	}
	if err := netlink.LinkSetUp(tap); err != nil {
		_ = netlink.LinkDel(tap)
		return fmt.Errorf("tap %s up: %w", name, err)
	}
	return nil
}

// Addresses are the IPv4 networks on the machine's links, every link's
// (not only ctrbench's): what a new subnet must not overlap.
func Addresses() ([]*net.IPNet, error) {
	addrs, err := dump(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	out := make([]*net.IPNet, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.IPNet)
	}
	return out, nil
}

// subnetLock is the file whose lock serialises choosing a subnet and
// making the link or network that takes it, among ctrbench processes: two
// campaigns starting at once would otherwise both find a subnet free and
// both take it.
var subnetLock = "/run/ctrbench-subnets.lock"

// LockSubnets takes the subnet lock (an exclusive flock), released by
// the returned func.
func LockSubnets() (func(), error) {
	f, err := os.OpenFile(subnetLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the subnet lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("the subnet lock %s: %w", subnetLock, err)
	}
	return func() { f.Close() }, nil
}

// Taken reports, for each subnet, whether an address of the machine's
// links is in it or a link's network holds it: a subnet to leave alone.
func Taken(subnets []netip.Prefix) ([]bool, error) {
	addrs, err := Addresses()
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(subnets))
	for i, sub := range subnets {
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP.To4())
			if !ok {
				continue
			}
			ones, _ := a.Mask.Size()
			if sub.Contains(ip) || netip.PrefixFrom(ip, ones).Masked().Overlaps(sub) {
				out[i] = true
				break
			}
		}
	}
	return out, nil
}

// dump is a netlink dump, read again when the kernel interrupted it (the
// links changed while it was read: other campaigns making and removing
// theirs), a few times, so a list is never partial.
func dump[T any](list func() (T, error)) (T, error) {
	var v T
	var err error
	for i := range 10 {
		if v, err = list(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
		time.Sleep(time.Duration(i+1) * 10 * time.Millisecond)
	}
	return v, fmt.Errorf("the kernel interrupted every one of 10 dumps (links changing all the time): %w", err)
}
