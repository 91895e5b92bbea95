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
	take("Kubernetes nodes", K8sNodes, 1)
	take("Kubernetes services", K8sServices, 1)
	take("Kubernetes pods", K8sPods, 1<<(24-K8sPodsBits))
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

// TestK8sPlan: the cluster's node, Service and pod ranges are the layout's
// blocks, each node's pods a /24 of the pods' range, node addresses on the
// node network above its gateway, and nothing of it overlaps.
func TestK8sPlan(t *testing.T) {
	k := Default().K8s()
	if k.Nodes.String() != "198.18.240.0/24" || k.Services.String() != "198.18.241.0/24" || k.Pods.String() != "198.18.244.0/22" {
		t.Fatalf("plan %+v", k)
	}
	if !k.Pods.IsValid() || k.Pods.Masked() != k.Pods {
		t.Fatalf("pods %v is not aligned", k.Pods)
	}
	seen := map[netip.Prefix]bool{}
	for n := 1; n <= MaxK8sNodes; n++ {
		p := k.NodePods(n)
		if !k.Pods.Contains(p.Addr()) || seen[p] || p.Bits() != 24 {
			t.Errorf("node %d's pods %v: not a /24 of %v of its own", n, p, k.Pods)
		}
		seen[p] = true
		if a := k.Node(n); !k.Nodes.Contains(a) || a == Gateway(k.Nodes) {
			t.Errorf("node %d at %v: not on %v beside its gateway", n, a, k.Nodes)
		}
	}
	if k.Nodes.Overlaps(k.Pods) || k.Services.Overlaps(k.Pods) || k.Nodes.Overlaps(k.Services) {
		t.Errorf("the plan's ranges overlap: %+v", k)
	}
	other := MustParse("10.20.0.0/15").K8s()
	if other.NodePods(2).String() != "10.20.245.0/24" || other.Node(1).String() != "10.20.240.2" {
		t.Errorf("another pool's plan %+v: node 2's pods %v, node 1 %v", other, other.NodePods(2), other.Node(1))
	}
	defer func() {
		if recover() == nil {
			t.Error("node 5 of 4 did not panic")
		}
	}()
	k.Node(MaxK8sNodes + 1)
}
