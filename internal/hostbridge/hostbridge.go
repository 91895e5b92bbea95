// Package hostbridge is a Linux bridge ctrbench makes on the machine for
// one campaign of a platform whose instances it plugs in itself (LXC's
// veths, a virtual machine's taps): named ctb…, carrying the host's address
// (.1 of a /24 in RFC 2544's benchmark range, from the network lab's address
// plan), forwarding allowed between its ports in the machine's FORWARD
// chain (package firewall), and the addresses .2 to .254 handed out to
// instances, lowest free first.
package hostbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
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
	Name     string // the link, ctb…
	prefix   string // "198.18.202."
	filtered bool   // the forward rule was inserted

	mu    sync.Mutex
	inUse [255]bool
}

// Make creates bridge name with address prefix+"1"/24 (prefix like
// "198.18.202."), up, and lets its ports forward to each other.
func Make(name, prefix string) (*Bridge, error) {
	gw := &net.IPNet{IP: net.ParseIP(prefix + "1").To4(), Mask: net.CIDRMask(24, 32)}
	if gw.IP == nil {
		return nil, fmt.Errorf("bridge %s: bad address prefix %q", name, prefix)
	}
	if err := links.AddBridge(name, gw); err != nil {
		return nil, fmt.Errorf("%w (%s0/24: is another campaign's bridge on it up?)", err, prefix)
	}
	b := &Bridge{Name: name, prefix: prefix}
	if firewall.Available() {
		if err := firewall.AllowBridge(name); err != nil {
			_ = links.Remove(name)
			return nil, err
		}
		b.filtered = true
	}
	return b, nil
}

// Gateway is the host's address on the bridge.
func (b *Bridge) Gateway() string { return b.prefix + "1" }

// Subnet is the bridge's network, in CIDR notation.
func (b *Bridge) Subnet() string { return b.prefix + "0/24" }

// Broadcast is the bridge network's broadcast address.
func (b *Bridge) Broadcast() string { return b.prefix + "255" }

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
			return i, b.prefix + strconv.Itoa(i), nil
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
