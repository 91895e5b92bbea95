// Package wireguard runs a WireGuard tunnel in user space: wireguard-go,
// used as a library, on a TUN device. ctrbench's agent runs it inside an
// emulated host's network namespace to measure container traffic over an
// encrypted overlay.
//
// It runs in user space because the machines ctrbench is built and tested on
// have no WireGuard kernel module (and cannot load one), while TUN is built
// in. Results measured through it are therefore those of wireguard-go, not of
// the kernel's WireGuard, and callers record Kind next to them: it reports
// "userspace (wireguard-go <module version>)".
package wireguard

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"runtime/debug"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// DefaultMTU is used when Config.MTU is 0: WireGuard's usual 1420, which
// leaves room for its 80-byte overhead under a 1500-byte link over IPv6.
const DefaultMTU = 1420

const (
	keyLen    = 32
	maxIfName = 15 // IFNAMSIZ - 1
	minMTU    = 576
	minMTU6   = 1280
	maxMTU    = 65535
)

// modulePath is wireguard-go's module, whose version Kind reports.
const modulePath = "golang.zx2c4.com/wireguard"

// requiredVersion is the version go.mod requires, reported when the binary
// carries no module list (test binaries do not); a test keeps it in step
// with go.mod.
const requiredVersion = "v0.0.0-20260522210424-ecfc5a8d5446"

// Peer is one remote end of the tunnel.
type Peer struct {
	PublicKey  string   `json:"public_key"`  // base64, like `wg pubkey`
	Endpoint   string   `json:"endpoint"`    // "ip:port"; empty: learnt from the peer's handshake
	AllowedIPs []string `json:"allowed_ips"` // CIDRs routed to and accepted from this peer
	// PersistentKeepalive, in seconds (0 = off), keeps the session alive
	// between trials so no trial's first packets wait for a handshake.
	PersistentKeepalive int `json:"persistent_keepalive,omitempty"`
}

// Config describes one tunnel interface and its peers.
type Config struct {
	Interface  string `json:"interface"`   // TUN name, starts with "ctb", at most 15 characters
	MTU        int    `json:"mtu"`         // 0 means DefaultMTU
	Address    string `json:"address"`     // CIDR put on the interface, e.g. "198.18.250.1/24"
	PrivateKey string `json:"private_key"` // base64
	ListenPort int    `json:"listen_port"` // UDP port; 0 picks a free one
	Peers      []Peer `json:"peers"`
}

// GenerateKey returns a new private key (X25519, clamped) and its public
// key, both base64 in standard encoding, as `wg genkey | wg pubkey` prints.
func GenerateKey() (private, public string, err error) {
	var k [keyLen]byte
	if _, err := rand.Read(k[:]); err != nil {
		return "", "", fmt.Errorf("reading random key: %w", err)
	}
	// Clamp as wg genkey does; X25519 clamps again when using it.
	k[0] &= 248
	k[31] = (k[31] & 127) | 64
	private = base64.StdEncoding.EncodeToString(k[:])
	public, err = PublicKey(private)
	if err != nil {
		return "", "", err
	}
	return private, public, nil
}

// PublicKey returns the base64 public key of a base64 private key.
func PublicKey(private string) (string, error) {
	k, err := parseKey(private)
	if err != nil {
		return "", fmt.Errorf("private key: %w", err)
	}
	pub, err := publicKey(k)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(pub[:]), nil
}

func publicKey(private [keyLen]byte) ([keyLen]byte, error) {
	var out [keyLen]byte
	sk, err := ecdh.X25519().NewPrivateKey(private[:])
	if err != nil {
		return out, fmt.Errorf("private key: %w", err)
	}
	copy(out[:], sk.PublicKey().Bytes())
	return out, nil
}

// parseKey decodes a base64 WireGuard key: exactly 32 bytes, not all zero
// (wireguard-go reads a zero key as "no key").
func parseKey(s string) ([keyLen]byte, error) {
	var k [keyLen]byte
	if s == "" {
		return k, errors.New("missing")
	}
	if n := base64.StdEncoding.EncodedLen(keyLen); len(s) != n {
		return k, fmt.Errorf("want %d base64 characters (32 bytes), got %d", n, len(s))
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return k, fmt.Errorf("not base64: %w", err)
	}
	copy(k[:], b)
	if k == ([keyLen]byte{}) {
		return k, errors.New("all zero")
	}
	return k, nil
}

// Validate reports every problem in c, one per clause, or nil.
func (c Config) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	if err := validName(c.Interface); err != nil {
		bad("interface %q: %v", c.Interface, err)
	}
	addr, err := netip.ParsePrefix(c.Address)
	switch {
	case c.Address == "":
		bad("address: missing (want a CIDR such as 198.18.250.1/24)")
	case err != nil:
		bad("address %q: not a CIDR: %v", c.Address, err)
	case addr.Addr().IsUnspecified() || addr.Addr().IsMulticast():
		bad("address %q: not a unicast address", c.Address)
	}
	if c.MTU != 0 && (c.MTU < minMTU || c.MTU > maxMTU) {
		bad("mtu %d: want %d to %d (0 for %d)", c.MTU, minMTU, maxMTU, DefaultMTU)
	} else if c.MTU != 0 && c.MTU < minMTU6 && err == nil && addr.Addr().Is6() {
		bad("mtu %d: an IPv6 address needs at least %d", c.MTU, minMTU6)
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listen port %d: want 0 to 65535", c.ListenPort)
	}
	var self [keyLen]byte
	haveSelf := false
	if k, err := parseKey(c.PrivateKey); err != nil {
		bad("private key: %v", err)
	} else if self, err = publicKey(k); err != nil {
		bad("private key: %v", err)
	} else {
		haveSelf = true
	}

	keys := map[[keyLen]byte]int{}
	nets := map[netip.Prefix]int{}
	for i, p := range c.Peers {
		if k, err := parseKey(p.PublicKey); err != nil {
			bad("peer %d: public key: %v", i, err)
		} else if j, dup := keys[k]; dup {
			bad("peer %d: public key is also peer %d's", i, j)
		} else if haveSelf && k == self {
			bad("peer %d: public key is this interface's own", i)
		} else {
			keys[k] = i
		}
		if p.Endpoint != "" {
			ap, err := netip.ParseAddrPort(p.Endpoint)
			switch {
			case err != nil:
				bad("peer %d: endpoint %q: want ip:port ([ip]:port for IPv6), no host names: %v", i, p.Endpoint, err)
			case ap.Port() == 0:
				bad("peer %d: endpoint %q: port 0", i, p.Endpoint)
			case !ap.Addr().IsValid() || ap.Addr().IsUnspecified() || ap.Addr().IsMulticast():
				bad("peer %d: endpoint %q: not a unicast address", i, p.Endpoint)
			}
		}
		for _, s := range p.AllowedIPs {
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				bad("peer %d: allowed IP %q: not a CIDR: %v", i, s, err)
				continue
			}
			pfx = pfx.Masked()
			if j, dup := nets[pfx]; dup {
				if j == i {
					bad("peer %d: allowed IP %s listed twice", i, pfx)
				} else {
					bad("peer %d: allowed IP %s is also peer %d's", i, pfx, j)
				}
				continue
			}
			nets[pfx] = i
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("wireguard config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// validName checks a Linux interface name that ctrbench may create.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("missing")
	case !strings.HasPrefix(name, platform.LinkPrefix):
		return fmt.Errorf("must start with %q (every link ctrbench creates does)", platform.LinkPrefix)
	case len(name) > maxIfName:
		return fmt.Errorf("%d characters, at most %d", len(name), maxIfName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("character %q not allowed (letters, digits, - _ .)", r)
		}
	}
	return nil
}

// Kind names the WireGuard implementation Run uses, for callers to record
// with their results: "userspace (wireguard-go <module version>)".
func Kind() string {
	return "userspace (wireguard-go " + moduleVersion() + ")"
}

// moduleVersion is wireguard-go's module version as built into this binary.
func moduleVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionIn(bi)
}

// versionIn finds wireguard-go's version in bi, following a replace
// directive, else returns requiredVersion.
func versionIn(bi *debug.BuildInfo) string {
	if bi == nil {
		return requiredVersion
	}
	for _, m := range bi.Deps {
		if m.Path != modulePath {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Version != "" {
				return r.Path + " " + r.Version
			}
			return r.Path
		}
		return m.Version
	}
	return requiredVersion
}
