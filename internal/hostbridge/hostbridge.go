// Package hostbridge is a Linux bridge ctrbench makes on the machine for
// one campaign of a platform whose instances it plugs in itself (LXC's
// veths, a virtual machine's taps): named ctb…, carrying the host's address
// (.1 of a /24 of the campaign's subnet pool, package subnets), forwarding allowed between its ports in the machine's FORWARD
// chain (package firewall), and the addresses .2 to .254 handed out to
// instances, lowest free first.
package hostbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Name is the bridge of a campaign for one kind of instance ("l" for LXC,
// "v" for virtual machines): ctb, the kind, six hex digits of the
// campaign's hash. The ports made for it are named after it (Port), so a
// bridge and its ports can be found by name after a crash.
func Name(kind, campaign string) string {
	sum := sha256.Sum256([]byte(campaign))
	return vocab.LinkPrefix + kind + hex.EncodeToString(sum[:3])
}

// Port is the host end of instance n's link into bridge name (a veth, a
// tap): the bridge's name, the port's kind and n, at most 15 characters.
func Port(name, kind string, n int) string { return name + kind + strconv.Itoa(n) }

// Bridge is one campaign's bridge.
type Bridge struct {
	Name     string       // the link, ctb…
	subnet   netip.Prefix // its /24, 198.18.202.0/24
	filtered bool         // the forward rule was inserted

	mu    sync.Mutex
	inUse [255]bool
}

// Make creates bridge name up, with address .1 of pool's block preferred
// or, when a link of the machine has an address in it (another campaign's
// bridge of the same kind is up), of the pool's first spare block free;
// and lets its ports forward to each other.
func Make(name string, pool subnets.Pool, preferred int) (*Bridge, error) {
	unlock, err := links.LockSubnets()
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", name, err)
	}
	defer unlock()
	subnet, err := freeSubnet(pool, preferred)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", name, err)
	}
	gw := &net.IPNet{IP: net.IP(subnets.Gateway(subnet).AsSlice()), Mask: net.CIDRMask(24, 32)}
	if err := links.AddBridge(name, gw); err != nil {
		return nil, err
	}
	b := &Bridge{Name: name, subnet: subnet}
	if firewall.Available() {
		if err := firewall.AllowBridge(name); err != nil {
			_ = links.Remove(name)
			return nil, err
		}
		b.filtered = true
	}
	return b, nil
}

// freeSubnet is pool's block preferred when no address of the machine is
// in it, else the first spare block without one.
func freeSubnet(pool subnets.Pool, preferred int) (netip.Prefix, error) {
	blocks := []int{preferred}
	for b := subnets.SpareFirst; b <= subnets.SpareLast; b++ {
		blocks = append(blocks, b)
	}
	candidates := make([]netip.Prefix, len(blocks))
	for i, b := range blocks {
		candidates[i] = pool.Block(b)
	}
	taken, err := links.Taken(candidates)
	if err != nil {
		return netip.Prefix{}, err
	}
	for i, c := range candidates {
		if !taken[i] {
			return c, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("%s and every spare /24 from %s to %s are taken by the machine's links: are other campaigns' bridges up? `ctrbench clean` removes those of killed runs", pool.Block(preferred), pool.Block(subnets.SpareFirst), pool.Block(subnets.SpareLast))
}

// Gateway is the host's address on the bridge.
func (b *Bridge) Gateway() string { return subnets.Gateway(b.subnet).String() }

// Subnet is the bridge's network, in CIDR notation.
func (b *Bridge) Subnet() string { return b.subnet.String() }

// Broadcast is the bridge network's broadcast address.
func (b *Bridge) Broadcast() string { return b.addr(255) }

// addr is address n of the bridge's /24.
func (b *Bridge) addr(n int) string {
	a := b.subnet.Addr().As4()
	a[3] = byte(n)
	return netip.AddrFrom4(a).String()
}

// Filtered reports whether a forward rule was inserted for the bridge.
func (b *Bridge) Filtered() bool { return b.filtered }

// Alloc takes the lowest free instance address: its last byte (the
// instance's number on the bridge) and the address.
func (b *Bridge) Alloc() (int, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 2; i <= 254; i++ {
		if !b.inUse[i] {
			b.inUse[i] = true
			return i, b.addr(i), nil
		}
	}
	return 0, "", fmt.Errorf("bridge %s: all 253 addresses are in use", b.Name)
}

// Release gives address number n back; 0 is none.
func (b *Bridge) Release(n int) {
	if n <= 0 || n > 254 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inUse[n] = false
}

// Remove deletes the forward rule, the ports still there and the bridge.
func (b *Bridge) Remove() error {
	var errs []error
	if b.filtered {
		errs = append(errs, firewall.RemoveBridge(b.Name))
	}
	errs = append(errs, removeLinks(b.Name))
	return errors.Join(errs...)
}

// Clean removes what a killed run left of bridge name: its forward rule,
// its ports and the bridge (gone already is no error).
func Clean(name string) error {
	_, err := firewall.Clean(func(link string) bool { return link == name })
	return errors.Join(err, removeLinks(name))
}

// removeLinks deletes the bridge called name and every port named after
// it (Port).
func removeLinks(name string) error {
	_, err := links.RemoveMatching(func(l string) bool { return strings.HasPrefix(l, name) })
	return err
}
