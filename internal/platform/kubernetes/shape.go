package kubernetes

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Annotations of a node of ctrbench's test cluster that say where its link
// to the other nodes is on this machine: NetNSAnnotation the path of the
// node's network namespace, whose eth0 is the link's node end (an
// underlay rate shapes its egress); LinkAnnotation "BRIDGE/PORT", the
// machine's bridge and the link's port in it (a delay line is spliced in
// between). A user's cluster's nodes have neither: their links are not
// ctrbench's to shape.
const (
	NetNSAnnotation = "ctrbench.io/netns"
	LinkAnnotation  = "ctrbench.io/link"
)

// linkOf is the namespace holding node n's link, "" when it is not on this
// machine.
func linkOf(n kube.Node) string { return n.Annotations[NetNSAnnotation] }

// portOf is the bridge and the port in it of node n's link on this
// machine; ok false when it does not say.
func portOf(n kube.Node) (bridge, port string, ok bool) {
	bridge, port, ok = strings.Cut(n.Annotations[LinkAnnotation], "/")
	return bridge, port, ok && bridge != "" && port != ""
}

// shape shapes the campaign's nodes' links to u before a trial: each
// node's egress onto the link to u's rate (tbf, as the network lab shapes
// emulated hosts' underlay; unlimited: none), and, where the campaign
// delays, its delay line to u's delay, jitter and loss. Traffic between
// pods on two nodes crosses a link of that rate and delay each way.
func (p *Platform) shape(u vocab.Underlay) error {
	rate := u.Rate
	if rate.Unlimited() {
		rate = vocab.Rate{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if u.Delays() && len(p.splices) == 0 {
		return fmt.Errorf("kubernetes: underlay %q delays the links between nodes, and no delay line was put on them (the campaign was prepared without a cell that delays)", u)
	}
	for _, s := range p.splices {
		s.Set(u)
	}
	if len(p.splices) > 0 {
		maps.Copy(p.info, netlab.DelayInfo("kubernetes.underlay.", u))
	}
	if rate == p.rate {
		return nil
	}
	for _, n := range p.nodes {
		if linkOf(n) == "" {
			return fmt.Errorf("kubernetes: underlay %s: node %s's link is not ctrbench's to shape (only the test cluster's nodes, on this machine, say where theirs is: %s)", rate, n.Name, NetNSAnnotation)
		}
	}
	if err := shapeNodes(p.nodes, rate); err != nil {
		return err
	}
	p.rate = rate
	p.info["kubernetes.underlay.rate"] = netlab.EgressRateText(rate)
	return nil
}

// shapeNodes sets the egress of every node of nodes on this machine to
// rate.
func shapeNodes(nodes []kube.Node, rate vocab.Rate) error {
	for _, n := range nodes {
		if ns := linkOf(n); ns != "" {
			if err := netlab.ShapeEgress(ns, "eth0", rate); err != nil {
				return fmt.Errorf("kubernetes: shaping node %s's egress to %q: %w", n.Name, rate.String(), err)
			}
		}
	}
	return nil
}

// spliceNodes puts a delay line on every node's link (it delays nothing
// until shape sets it); delayed is whether the campaign delays at all.
// Before, it takes off what a killed campaign left on the links (a
// line's pair, a port out of its bridge): each campaign begins with the
// links as the cluster made them.
func spliceNodes(nodes []kube.Node, delayed bool) ([]*netlab.Splice, error) {
	var out []*netlab.Splice
	for i, n := range nodes {
		bridge, port, ok := portOf(n)
		if !ok {
			if delayed {
				return out, fmt.Errorf("kubernetes: the links between nodes delay here, and node %s's link is not ctrbench's to delay (only the test cluster's nodes, on this machine, say where theirs is: %s)", n.Name, LinkAnnotation)
			}
			continue
		}
		if err := netlab.Unsplice(bridge, port, netlab.SpliceName(i+1)); err != nil {
			return out, fmt.Errorf("kubernetes: node %s's link: %w", n.Name, err)
		}
		if !delayed {
			continue
		}
		s, err := netlab.SpliceDelay(bridge, port, i+1, uint64(i+1))
		if err != nil {
			return out, fmt.Errorf("kubernetes: node %s's link: %w", n.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// unsplice takes the delay lines off the links.
func unsplice(splices []*netlab.Splice) error {
	var errs []error
	for _, s := range splices {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
