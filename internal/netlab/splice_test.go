package netlab

import (
	"testing"

	"github.com/vishvananda/netlink"
)

// TestSplice: a delay line spliced into a bridge's port takes the port out
// of the bridge and puts its pair's switch end in; Close puts the port
// back and removes the pair; Unsplice does the same for what a killed
// campaign left (here: a port taken out and a pair left), and does nothing
// to a link as it should be.
func TestSplice(t *testing.T) {
	needRoot(t)
	const bridge, port, peer, n = "ctbtsplb", "ctbtsplp", "ctbtsplq", 97
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{SpliceName(n), port, bridge} {
			if lk, err := netlink.LinkByName(name); err == nil {
				_ = netlink.LinkDel(lk)
			}
		}
	})
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port, MasterIndex: br.Attrs().Index}, PeerName: peer}); err != nil {
		t.Fatal(err)
	}
	masterOf := func(name string) string {
		t.Helper()
		lk, err := netlink.LinkByName(name)
		if err != nil {
			return "gone"
		}
		if lk.Attrs().MasterIndex == 0 {
			return ""
		}
		m, err := netlink.LinkByIndex(lk.Attrs().MasterIndex)
		if err != nil {
			t.Fatal(err)
		}
		return m.Attrs().Name
	}
	s, err := SpliceDelay(bridge, port, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, in := masterOf(port), masterOf("ctbke97"); got != "" || in != bridge {
		t.Errorf("spliced: the port's master %q, the pair's switch end's %q; want none and %s", got, in, bridge)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, pair := masterOf(port), masterOf(SpliceName(n)); got != bridge || pair != "gone" {
		t.Errorf("after Close: the port's master %q, the pair %q; want %s and gone", got, pair, bridge)
	}
	// What a killed campaign leaves: spliced, never closed (its line
	// stopped with the process).
	left, err := SpliceDelay(bridge, port, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	left.line.Close()
	if err := Unsplice(bridge, port, SpliceName(n)); err != nil {
		t.Fatal(err)
	}
	if got, pair := masterOf(port), masterOf(SpliceName(n)); got != bridge || pair != "gone" {
		t.Errorf("after Unsplice: the port's master %q, the pair %q; want %s and gone", got, pair, bridge)
	}
	if err := Unsplice(bridge, port, SpliceName(n)); err != nil {
		t.Errorf("Unsplice of a link as it should be: %v", err)
	}
	if !spliceRE.MatchString(SpliceName(n)) || !spliceRE.MatchString("ctbke97") || spliceRE.MatchString(port) {
		t.Errorf("Clean's pattern %s and the splice's names", spliceRE)
	}
}
