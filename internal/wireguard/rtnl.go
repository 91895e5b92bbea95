package wireguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
)

// configureLink puts addr on the TUN, sets its MTU and brings it up, in the
// calling process's network namespace.
func configureLink(name string, addr netip.Prefix, mtu int) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("finding %s: %w", name, err)
	}
	ipnet := &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), addr.Addr().BitLen())}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipnet}); err != nil {
		return fmt.Errorf("adding %s to %s: %w", addr, name, err)
	}
	if err := netlink.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("setting the MTU of %s to %d: %w", name, mtu, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("bringing %s up: %w", name, err)
	}
	return nil
}

// waitGone waits until the kernel has removed the link.
func waitGone(name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := netlink.LinkByName(name)
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still exists %s after closing it", name, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
