package kubernetes

import (
	"fmt"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// NetNSAnnotation names, on a node of ctrbench's test cluster, the path of
// the node's network namespace on this machine: its eth0 is the node's
// link to the others (a veth into the cluster's bridge), which an
// underlay rate shapes. A user's cluster's nodes have no such annotation:
// their links are not ctrbench's to shape.
const NetNSAnnotation = "ctrbench.io/netns"

// linkOf is the namespace holding node n's link, "" when it is not on this
// machine.
func linkOf(n kube.Node) string { return n.Annotations[NetNSAnnotation] }

// shape shapes every campaign node's egress onto the link between the
// nodes to rate (tbf, as the network lab shapes emulated hosts' underlay;
// unlimited: none), so traffic between pods on two nodes crosses a link of
// that rate each way.
func (p *Platform) shape(rate vocab.Rate) error {
	if rate.Unlimited() {
		rate = vocab.Rate{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
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
	text := rate.String()
	if rate.Unlimited() {
		text = "unlimited"
	}
	p.info["kubernetes.underlay.rate"] = text + " (tbf on each node's egress)"
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
