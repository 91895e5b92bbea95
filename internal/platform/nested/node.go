package nested

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Node is an engine container without children of its own: a container
// of the machine's engine, on the campaign's bridge, running a Docker
// Engine whose data root is a tmpfs and whose API socket is a file on the
// machine. A cluster platform makes nodes of them (Docker Swarm's). It is
// removed with everything inside it by Remove, by Close, or — after a
// kill — by `ctrbench clean` (it carries the campaign's labels).
type Node struct {
	Name   string
	IP     string           // its address on the campaign's bridge
	Socket string           // its engine's API, "unix:///…/docker.sock"
	NetNS  string           // its network namespace's path (its eth0 is on the campaign's bridge)
	Engine *docker.Platform // its engine, with the agent image loaded
	pr     *parent
}

// StartNode starts a node called name (its host name hostname), waits for its engine and loads
// the agent image into it. Prepare must have run.
func (p *Platform) StartNode(ctx context.Context, name, hostname string, labels map[string]string) (*Node, error) {
	p.mu.Lock()
	if p.closed || p.parentImage == "" {
		p.mu.Unlock()
		return nil, errors.New("nested platform: StartNode before Prepare or after Close")
	}
	pr := &parent{name: name, ready: make(chan struct{}), network: vocab.Bridge, labels: labels, subnet: -1, pool: p.setup.Subnets, hostname: hostname, requested: time.Now()}
	// Its engine's default bridge gets a subnet of ctrbench's, so it never
	// meets the campaign's bridge it sits on.
	if pr.subnet = p.takeSubnet(); pr.subnet < 0 {
		p.mu.Unlock()
		return nil, errInnerSubnets
	}
	p.parents[pr] = true
	pr.done = func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.parents, pr)
		p.subnets[pr.subnet] = false
	}
	p.mu.Unlock()
	pr.setUp(ctx, p)
	if pr.err != nil {
		return nil, errors.Join(pr.err, pr.remove(context.WithoutCancel(ctx)))
	}
	n := &Node{Name: name, IP: pr.ip, Socket: "unix://" + pr.sock + "/docker.sock", Engine: pr.inner, pr: pr}
	n.NetNS = pr.outer.NetNSPath()
	return n, nil
}

// Remove removes the node and everything in it. Safe to call twice.
func (n *Node) Remove(ctx context.Context) error { return n.pr.remove(ctx) }

// HasContainer reports whether the node's engine still holds container
// id: its directory in the engine's data root, seen from this machine
// through the node's root (its mount namespace). A container the engine
// has removed is gone from there.
func (n *Node) HasContainer(id string) bool {
	pp, ok := n.pr.outer.(interface{ Pid() int })
	if !ok || pp.Pid() <= 0 || id == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", pp.Pid()), dataRoot, "containers", id))
	return err == nil
}
