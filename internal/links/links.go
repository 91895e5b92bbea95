// Package links manages host network links ctrbench creates; every one is
// named with platform.LinkPrefix so leftovers can be found and removed. It
// never touches a link without that prefix.
package links

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// List returns the names of host links named with the ctrbench prefix.
func List() ([]string, error) {
	ls, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var out []string
	for _, l := range ls {
		if name := l.Attrs().Name; strings.HasPrefix(name, platform.LinkPrefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

// RemoveAll deletes every host link named with the ctrbench prefix, except
// those in keep. It returns the names removed.
func RemoveAll(keep map[string]bool) ([]string, error) {
	return RemoveMatching(func(name string) bool { return !keep[name] })
}

// RemoveMatching deletes the host links named with the ctrbench prefix for
// which match is true, and returns their names.
func RemoveMatching(match func(name string) bool) ([]string, error) {
	ls, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var removed []string
	var errs []string
	for _, l := range ls {
		name := l.Attrs().Name
		if !strings.HasPrefix(name, platform.LinkPrefix) || !match(name) {
			continue
		}
		// Deleting one end of a veth pair deletes its peer too (and a
		// parent its macvlan children), so a link listed a moment ago may
		// already be gone: that is success.
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		removed = append(removed, name)
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("removing links: %s", strings.Join(errs, "; "))
	}
	return removed, nil
}
