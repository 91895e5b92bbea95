package links

import (
	"os"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestListAndRemoveOnlyPrefixed(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("creates links: needs root")
	}
	// Links that exist already (another campaign's) are kept.
	before, err := List()
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{}
	for _, l := range before {
		keep[l] = true
	}
	mk := func(name, peer string) {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}
		if err := netlink.LinkAdd(veth); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		t.Cleanup(func() {
			if l, err := netlink.LinkByName(name); err == nil {
				_ = netlink.LinkDel(l)
			}
		})
	}
	mk("ctbtest0", "ctbtest1")
	mk("xtbtest0", "xtbtest1") // not ours: must survive

	got, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ctbtest0", "ctbtest1"} {
		if !slices.Contains(got, want) {
			t.Errorf("List() = %v, missing %s", got, want)
		}
	}
	if slices.Contains(got, "xtbtest0") {
		t.Errorf("List() includes a link without the prefix")
	}
	removed, err := RemoveAll(keep)
	if err != nil {
		t.Fatal(err)
	}
	// Deleting one end of a veth deletes its peer, which is fine.
	if !slices.Contains(removed, "ctbtest0") && !slices.Contains(removed, "ctbtest1") {
		t.Errorf("removed %v", removed)
	}
	for _, name := range []string{"ctbtest0", "ctbtest1"} {
		if _, err := netlink.LinkByName(name); err == nil {
			t.Errorf("%s still exists", name)
		}
	}
	if _, err := netlink.LinkByName("xtbtest0"); err != nil {
		t.Errorf("a link without the prefix was removed: %v", err)
	}
	for l := range keep {
		if _, err := netlink.LinkByName(l); err != nil {
			t.Errorf("kept link %s was removed", l)
		}
	}
}
