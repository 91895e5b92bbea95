package netlab

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/vishvananda/netlink"

	"github.com/ctrbench/ctrbench/internal/delayline"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Splice is a delay line spliced into a link of the machine's network
// namespace that was a bridge's port — a cluster's node link on the
// machine (ctrbench's test Kubernetes cluster): the port left the bridge,
// a veth pair took its place, and the line carries what arrives from the
// port to the bridge after the underlay's delay (and the rest back at
// once), as the network lab's lines carry an emulated host's egress.
type Splice struct {
	bridge, port, in string
	line             *delayline.Line
}

// spliceRE matches the veths splices make ("ctbkd<n>" and its peer
// "ctbke<n>"): Clean removes those a killed campaign left.
var spliceRE = regexp.MustCompile(`^ctbk[de][0-9]+$`)

// SpliceDelay splices a delay line between port, a port of bridge in the
// machine's namespace, and the bridge, the pair named for n; the line
// delays nothing until Set. Close undoes it.
func SpliceDelay(bridge, port string, n int, seed uint64) (*Splice, error) {
	s := &Splice{bridge: bridge, port: port, in: SpliceName(n)}
	out := fmt.Sprintf("ctbke%d", n)
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil, fmt.Errorf("netlab: splicing %s: bridge %s: %w", port, bridge, err)
	}
	p, err := netlink.LinkByName(port)
	if err != nil {
		return nil, fmt.Errorf("netlab: splicing %s: %w", port, err)
	}
	if p.Attrs().MasterIndex != br.Attrs().Index {
		return nil, fmt.Errorf("netlab: splicing %s: it is not a port of %s", port, bridge)
	}
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: s.in, MTU: p.Attrs().MTU}, PeerName: out}); err != nil {
		return nil, fmt.Errorf("netlab: splicing %s: creating %s: %w", port, s.in, err)
	}
	fail := func(err error) (*Splice, error) { return nil, errors.Join(err, s.undo()) }
	peer, err := netlink.LinkByName(out)
	if err != nil {
		return fail(err)
	}
	if err := netlink.LinkSetMTU(peer, p.Attrs().MTU); err != nil {
		return fail(err)
	}
	if err := netlink.LinkSetNoMaster(p); err != nil {
		return fail(fmt.Errorf("netlab: taking %s out of %s: %w", port, bridge, err))
	}
	if err := netlink.LinkSetMaster(peer, br); err != nil {
		return fail(fmt.Errorf("netlab: plugging %s into %s: %w", out, bridge, err))
	}
	for _, name := range []string{port, s.in, out} {
		lk, err := netlink.LinkByName(name)
		if err == nil {
			err = netlink.LinkSetUp(lk)
		}
		if err != nil {
			return fail(fmt.Errorf("netlab: bringing up %s: %w", name, err))
		}
	}
	if s.line, err = delayline.Start(fmt.Sprintf("/proc/%d/ns/net", os.Getpid()), port, s.in, delayline.Params{}, seed); err != nil {
		return fail(fmt.Errorf("netlab: %w", err))
	}
	return s, nil
}

// Set makes the line delay, jitter and lose as u asks of one direction:
// half the round-trip delay, as the lab's lines do.
func (s *Splice) Set(u vocab.Underlay) {
	s.line.Set(lineParams(u))
}

// Stats are what the line did so far.
func (s *Splice) Stats() delayline.Stats { return s.line.Stats() }

// Close stops the line, removes the pair and puts the port back in its
// bridge.
func (s *Splice) Close() error {
	var err error
	if s.line != nil {
		err = s.line.Close()
	}
	return errors.Join(err, s.undo())
}

// undo removes the pair and puts the port back in its bridge.
func (s *Splice) undo() error { return Unsplice(s.bridge, s.port, s.in) }

// Unsplice puts port back in bridge and removes the veth pair named in
// (a splice's, left by a killed campaign or undone): the link as it was.
func Unsplice(bridge, port, in string) error {
	var errs []error
	if lk, err := netlink.LinkByName(in); err == nil {
		if err := netlink.LinkDel(lk); err != nil {
			errs = append(errs, fmt.Errorf("netlab: removing %s: %w", in, err))
		}
	}
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("netlab: bridge %s: %w", bridge, err))...)
	}
	p, err := netlink.LinkByName(port)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("netlab: %w", err))...)
	}
	if p.Attrs().MasterIndex != br.Attrs().Index {
		if err := netlink.LinkSetMaster(p, br); err != nil {
			errs = append(errs, fmt.Errorf("netlab: putting %s back in %s: %w", port, bridge, err))
		}
	}
	return errors.Join(errs...)
}

// SpliceName is the name of the veth of a splice made for n (its peer
// is the same with e for d).
func SpliceName(n int) string { return fmt.Sprintf("ctbkd%d", n) }
