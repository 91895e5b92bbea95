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
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"golang.org/x/sys/unix"
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

// Spare subnets: when a bridge's own /24 is taken (another campaign's
// bridge of the same kind is up), it takes the first free one of
// 198.18.204.0/24 to 198.18.249.0/24, between the lab's fixed subnets
// (.200 Open vSwitch, .201 macvlan, .202 LXC, .203 virtual machines) and
// its overlay's (.250).
const firstSpare, lastSpare = 204, 249

// lockFile serialises choosing a subnet and addressing the bridge among
// ctrbench processes: two campaigns starting at once would otherwise both
// find a /24 free and both take it.
var lockFile = "/run/ctrbench-hostbridge.lock"

// Make creates bridge name up, with address .1 of the /24 preferred
// (written as a prefix, "198.18.202.") or, when a link of the machine has
// an address in it, of the first spare /24 free; and lets its ports
// forward to each other.
func Make(name, preferred string) (*Bridge, error) {
	unlock, err := lock()
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", name, err)
	}
	defer unlock()
	prefix, err := freePrefix(preferred)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", name, err)
	}
	gw := &net.IPNet{IP: net.ParseIP(prefix + "1").To4(), Mask: net.CIDRMask(24, 32)}
	if gw.IP == nil {
		return nil, fmt.Errorf("bridge %s: bad address prefix %q", name, prefix)
	}
	if err := links.AddBridge(name, gw); err != nil {
		return nil, err
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

// lock takes lockFile (an exclusive flock, released by the returned func).
func lock() (func(), error) {
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the subnet lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("the subnet lock %s: %w", lockFile, err)
	}
	return func() { f.Close() }, nil
}

// freePrefix is preferred when no address of the machine is in its /24,
// else the first spare /24 without one.
func freePrefix(preferred string) (string, error) {
	addrs, err := links.Addresses()
	if err != nil {
		return "", err
	}
	taken := func(prefix string) bool {
		sub := &net.IPNet{IP: net.ParseIP(prefix + "0").To4(), Mask: net.CIDRMask(24, 32)}
		return slices.ContainsFunc(addrs, func(a *net.IPNet) bool { return sub.Contains(a.IP) || a.Contains(sub.IP) })
	}
	if !taken(preferred) {
		return preferred, nil
	}
	for third := firstSpare; third <= lastSpare; third++ {
		if p := fmt.Sprintf("198.18.%d.", third); !taken(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s0/24 and every spare /24 from 198.18.%d.0 to 198.18.%d.0 are taken by the machine's links: are other campaigns' bridges up? `ctrbench clean` removes those of killed runs", preferred, firstSpare, lastSpare)
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
