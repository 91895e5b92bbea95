package platform

import "github.com/ctrbench/ctrbench/internal/vocab"

// Cluster is what a platform that brings a cell's hosts itself — the
// nodes of a cluster it emulates here, or a user's — declares, in place of
// ctrbench's emulated hosts (Capabilities.Cluster). Everything else
// follows from that one fact, and the generic code asks it of nothing
// else, through ClusterOf: an instance runs on the node InstanceSpec.Host
// says (or InstanceSpec.Node names); a role may name its node (the node
// factor); every role of a cell placed on it runs on it (its hosts are no
// one else's); its host network is a node's own, never the machine's; the
// networks it lists join its nodes, for any number of them (no lab); and
// the links between its nodes are its to shape, or no one's.
type Cluster interface {
	// MaxNodes is the most nodes it gives one cell (0: no bound).
	MaxNodes() int
	// RoutesSettle: a route to an instance appears only after the
	// instance runs (a swarm overlay's, learnt by gossip): a client waits
	// for its route to the server before it starts.
	RoutesSettle() bool
	// Shape shapes the links between the nodes of p (an open platform of
	// this driver) as the network lab shapes its underlay, before each
	// trial of a cell on it (none: unshaped); an error when it cannot give
	// the underlay.
	Shape(p Platform, u vocab.Underlay) error
	// Delays: Shape can delay, jitter and lose packets on the links (else
	// only their rate is its to set), where the links are its to shape.
	Delays() bool
}

// ClusterOf returns the cluster a platform declares (Capabilities.Cluster)
// and whether it is one: the one question "does it bring its own nodes?".
func ClusterOf(c Capabilities) (Cluster, bool) {
	return c.Cluster, c.Cluster != nil
}
