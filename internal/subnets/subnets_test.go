package subnets

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"198.18.0.0/15", ""},
		{" 100.80.0.0/15 ", ""},
		{"10.200.0.0/15", ""},
		{"198.18.0.0/16", "want a /15"},
		{"198.16.0.0/14", "want a /15"},
		{"198.19.0.0/15", "did you mean 198.18.0.0/15"},
		{"127.0.0.0/15", "loopback"},
		{"224.0.0.0/15", "multicast"},
		{"0.0.0.0/15", "not a range"},
		{"fd00::/15", "IPv4 only"},
		{"198.18.0.0", "not CIDR"},
	} {
		p, err := Parse(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case c.err == "" && p.String() != strings.TrimSpace(c.in):
			t.Errorf("Parse(%q) = %s", c.in, p)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q) = %v, want an error saying %q", c.in, err, c.err)
		}
	}
}

func TestAddresses(t *testing.T) {
	p := Default()
	for _, c := range []struct {
		got, want string
	}{
		{p.IP4(0, 3), "198.18.0.3"},
		{p.IP4(202, 1), "198.18.202.1"},
		{p.IP4(256+7, 1), "198.19.7.1"},
		{p.Block(EnginesFirst).String(), "198.19.128.0/24"},
		{p.Swarm().String(), "198.19.192.0/20"},
		{p.Inner().String(), "198.19.208.0/20"},
		{p.OverlayNet(false).String(), "198.19.0.0/18"},
		{p.OverlayNet(true).String(), "198.19.64.0/18"},
		{p.InnerBridge(0).String(), "198.19.224.0/26"},
		{p.InnerBridge(5).String(), "198.19.225.64/26"},
		{p.InnerBridge(InnerBridgeCount - 1).String(), "198.19.255.192/26"},
		{CIDR(p.Block(LXCBridge), 1), "198.18.202.1/24"},
		{Gateway(p.InnerBridge(5)).String(), "198.19.225.65"},
		{MustParse("10.200.0.0/15").IP4(300, 9), "10.201.44.9"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	if !p.Contains(netip.MustParseAddr("198.19.255.255")) || p.Contains(netip.MustParseAddr("198.20.0.0")) || p.Contains(netip.MustParseAddr("192.168.48.1")) {
		t.Error("Contains is wrong at the pool's edges")
	}
	if (Pool{}).String() != DefaultPool {
		t.Errorf("the zero pool is %s, want the default", Pool{})
	}
}

// TestLayoutDisjoint checks that no two regions of the layout share a
// block, and that every region is inside the pool.
func TestLayoutDisjoint(t *testing.T) {
	owner := map[int]string{}
	take := func(what string, first, n int) {
		for b := first; b < first+n; b++ {
			if b < 0 || b >= Blocks {
				t.Fatalf("%s: block %d is outside the pool", what, b)
			}
			if o, ok := owner[b]; ok {
				t.Errorf("block %d is both %s and %s", b, o, what)
			}
			owner[b] = what
		}
	}
	take("underlay", Underlay, 1)
	take("host bridges", HostBridge(1), MaxHosts)
	take("host OVS", HostOVS+1, 49) // HostNAT+h begins at 151
	take("host NAT", HostNAT+1, MachineOVS-HostNAT-1)
	take("machine OVS", MachineOVS, 1)
	take("macvlan", Macvlan, 1)
	take("LXC", LXCBridge, 1)
	take("VM", VMBridge, 1)
	take("spares", SpareFirst, SpareLast-SpareFirst+1)
	take("WireGuard", WireGuard, 1)
	take("overlay", Overlay, 1<<(24-OverlayBits))
	take("overlay-encrypted", OverlayEncrypted, 1<<(24-OverlayBits))
	take("engine networks", EnginesFirst, len(EngineNetworks()))
	take("swarm", SwarmPool, 1<<(24-SwarmPoolBits))
	take("inner pool", InnerPool, 1<<(24-InnerPoolBits))
	take("inner bridges", InnerBridges, 1<<(24-InnerBridgesBits))
	if OverlayHost(true, MaxOverlayHosts) >= EnginesFirst || OverlayHost(false, MaxOverlayHosts) >= OverlayEncrypted {
		t.Error("an overlay's last host is outside its /18")
	}
}
