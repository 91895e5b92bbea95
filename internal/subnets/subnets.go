// Package subnets is the pool every address ctrbench configures comes
// from, and its layout, written once: the network lab's links, LXC's and
// the VMs' bridges, the campaigns' Docker and podman networks, a swarm's
// overlays and ingress, the nested parents' inner bridges. By default the
// pool is 198.18.0.0/15, RFC 2544's range for benchmarking, which no
// user's network or VPN uses; a user moves it once (--subnet-pool, or the
// experiment file's subnet_pool) and the campaign records it.
//
// A pool is a /15: 512 subnets of 256 addresses, numbered 0 to 511
// (block b is the pool's first address plus b×256). Which block is what
// is this package's Layout; every other package asks it.
package subnets

import (
	"fmt"
	"net/netip"
	"strings"
)

// Bits is a pool's prefix length.
const Bits = 15

// Blocks is how many /24 subnets a pool holds.
const Blocks = 1 << (24 - Bits)

// DefaultPool is RFC 2544's benchmarking range.
const DefaultPool = "198.18.0.0/15"

// Pool is the range of addresses ctrbench configures.
type Pool struct {
	base netip.Addr // the /15's first address; invalid in the zero Pool
}

// Default is the pool when nothing else is asked: 198.18.0.0/15.
func Default() Pool { return MustParse(DefaultPool) }

// Parse reads a pool as CIDR: an IPv4 /15 (a shorter prefix is refused —
// ctrbench lays out exactly 512 subnets — and so is a longer one).
// Loopback, link-local, multicast and the unspecified range are refused.
func Parse(s string) (Pool, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return Pool{}, fmt.Errorf("subnet pool %q: not CIDR (want an IPv4 /%d such as %s)", s, Bits, DefaultPool)
	}
	a := p.Addr()
	switch {
	case !a.Is4():
		return Pool{}, fmt.Errorf("subnet pool %s: IPv4 only (such as %s)", s, DefaultPool)
	case p.Bits() != Bits:
		return Pool{}, fmt.Errorf("subnet pool %s: want a /%d (%d subnets of 256 addresses, such as %s); it is a /%d", s, Bits, Blocks, DefaultPool, p.Bits())
	case p.Masked() != p:
		return Pool{}, fmt.Errorf("subnet pool %s: not the first address of its /%d (did you mean %s?)", s, Bits, p.Masked())
	case a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() || a.As4()[0] == 0 || a.As4()[0] >= 240:
		return Pool{}, fmt.Errorf("subnet pool %s: not a range for hosts' networks (loopback, link-local, multicast or reserved); use one such as %s", s, DefaultPool)
	}
	return Pool{base: a}, nil
}

// MustParse is Parse for constants.
func MustParse(s string) Pool {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// IsZero reports whether p is the zero Pool (no pool given: callers use
// Default).
func (p Pool) IsZero() bool { return !p.base.IsValid() }

// OrDefault is p, or Default when p is zero.
func (p Pool) OrDefault() Pool {
	if p.IsZero() {
		return Default()
	}
	return p
}

// Prefix is the pool as a prefix.
func (p Pool) Prefix() netip.Prefix { return netip.PrefixFrom(p.OrDefault().base, Bits) }

// String is the pool in CIDR notation.
func (p Pool) String() string { return p.Prefix().String() }

// Contains reports whether a is in the pool.
func (p Pool) Contains(a netip.Addr) bool { return p.Prefix().Contains(a.Unmap()) }

// ContainsPrefix reports whether every address of n is in the pool.
func (p Pool) ContainsPrefix(n netip.Prefix) bool {
	return n.Bits() >= Bits && p.Contains(n.Addr())
}

// Addr is address host (0..255) of block b (0..511).
func (p Pool) Addr(b, host int) netip.Addr {
	if b < 0 || b >= Blocks || host < 0 || host > 255 {
		panic(fmt.Sprintf("subnets: address %d of block %d is outside a pool", host, b))
	}
	a := p.OrDefault().base.As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(b)<<8 | uint32(host)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// Block is block b as a /24.
func (p Pool) Block(b int) netip.Prefix { return netip.PrefixFrom(p.Addr(b, 0), 24) }

// Net is the /bits that begins at block b (bits 15..24, b aligned to it).
func (p Pool) Net(b, bits int) netip.Prefix {
	n := netip.PrefixFrom(p.Addr(b, 0), bits)
	if bits < Bits || bits > 24 || n.Masked() != n {
		panic(fmt.Sprintf("subnets: block %d does not begin a /%d", b, bits))
	}
	return n
}

// Sub is the i-th /bits subnet (bits 24..30) of block b.
func (p Pool) Sub(b, bits, i int) netip.Prefix {
	if bits < 24 || bits > 30 || i < 0 || i >= 1<<(bits-24) {
		panic(fmt.Sprintf("subnets: no /%d number %d in a block", bits, i))
	}
	return netip.PrefixFrom(p.Addr(b, i<<(32-bits)), bits)
}

// IP4 is the address of block b's host as dotted text.
func (p Pool) IP4(b, host int) string { return p.Addr(b, host).String() }

// Gateway is the first host address of n, where ctrbench puts a bridge's
// own address.
func Gateway(n netip.Prefix) netip.Addr { return n.Masked().Addr().Next() }

// CIDR is address host of n with n's prefix length ("198.18.202.1/24").
func CIDR(n netip.Prefix, host int) string {
	a := n.Masked().Addr()
	for i := 0; i < host; i++ {
		a = a.Next()
	}
	return netip.PrefixFrom(a, n.Bits()).String()
}
