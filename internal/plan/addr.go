package plan

import (
	"fmt"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// AddrKind says what an address is, before the instances exist.
type AddrKind int

const (
	// Loopback is 127.0.0.1.
	Loopback AddrKind = iota
	// Any is 0.0.0.0: every address of a namespace that is an instance's
	// own or an emulated host's, never the machine's (which would listen on
	// its real interface).
	Any
	// HostSide is the address a host (Addr.Host: 0 the machine, ≥1 an
	// emulated host) has on a network (Addr.Network): a bridge's gateway,
	// the machine's macvlan or OVS port, an emulated host's bridge or
	// overlay address. The network lab or the platform that made the
	// network knows it.
	HostSide
	// Own is the server instance's own address, known once it runs.
	Own
	// Published is the address and port the server's engine published
	// for it on the machine (Addr.Network says which: the bridge's
	// address, or loopback through the userland proxy), known once it
	// runs; the server listens on PublishedPort in its own namespace.
	Published
)

// PublishedPort is the port a server whose port its engine publishes
// listens on, in its own namespace: the engine must know it before the
// instance exists; the port on the machine is the engine's choice.
const PublishedPort = 15201

// Addr is an address as the plan knows it.
type Addr struct {
	Kind     AddrKind
	Network  vocab.Network // HostSide: the network
	Host     int           // HostSide: whose side
	Platform string        // HostSide: the platform whose network it is, when the platform made it
}

func (a Addr) String() string {
	switch a.Kind {
	case Loopback:
		return "127.0.0.1"
	case Any:
		return "0.0.0.0"
	case HostSide:
		return fmt.Sprintf("host %d's side of %s", a.Host, a.Network)
	case Published:
		if a.Network.Fronted() {
			return fmt.Sprintf("the address its platform fronts it at (%s)", a.Network)
		}
		return fmt.Sprintf("the port its engine published on the machine (%s)", a.Network)
	}
	return "the server's own address"
}

// Link is how a client reaches its server: where the server listens and
// the address the client connects to.
type Link struct {
	Bind, Target Addr
}

// link works out the Link between a server and its client, placed by a
// cell's factors. A server in the machine's own namespace never binds
// 0.0.0.0: it binds loopback, or the host-side address of the network its
// client sits on.
func link(srv, cli Role, factors map[string]string) (Link, error) {
	loop := Addr{Kind: Loopback}
	if srv.Network.Fronted() {
		// Its platform fronts it (a Kubernetes Service): any client
		// reaches it where the platform says.
		return Link{Addr{Kind: Any}, Addr{Kind: Published, Network: srv.Network}}, nil
	}
	if srv.Network.Publishes() && srv.Host > 0 {
		// The lab publishes it on its emulated host's address: any client
		// of the cell's hosts reaches it there.
		return Link{Addr{Kind: Any}, Addr{Kind: Published, Network: srv.Network, Host: srv.Host}}, nil
	}
	if srv.Network.Publishes() {
		if !cli.RootNS() {
			return Link{}, fmt.Errorf("network %s reaches the %s through a port its engine publishes on this machine: its %s must run on the machine (a host process, or a container on the host network), not on network %s; %s",
				srv.Network, srv.Name, cli.Name, cli.Network, toTheMachine(srv, cli, factors))
		}
		return Link{Addr{Kind: Any}, Addr{Kind: Published, Network: srv.Network}}, nil
	}
	switch {
	case srv.RootNS():
		if cli.RootNS() {
			return Link{loop, loop}, nil
		}
		side, err := hostSide(cli, 0)
		if err != nil {
			return Link{}, fmt.Errorf("%s: %w", srv.Name, err)
		}
		return Link{side, side}, nil
	case srv.InHostNS(): // a namespace of ctrbench's own
		if cli.InHostNS() && cli.Host == srv.Host {
			return Link{Addr{Kind: Any}, loop}, nil
		}
		side, err := hostSide(cli, srv.Host)
		if err != nil {
			return Link{}, fmt.Errorf("%s: %w", srv.Name, err)
		}
		return Link{Addr{Kind: Any}, side}, nil
	case srv.Network == vocab.Loopback:
		return Link{loop, loop}, nil
	}
	return Link{Addr{Kind: Any}, Addr{Kind: Own}}, nil
}

// hostSide is the address host has on the network client cli uses: the
// host's own network for a process without a namespace of its own.
func hostSide(cli Role, host int) (Addr, error) {
	network := cli.Network
	switch {
	case !cli.Driver.Caps.Net.OwnNetNS:
		network = vocab.Host
	case cli.Provision.Wire != "":
		network = cli.Provision.Wire // its outer namespace's (a nested parent's)
	}
	a := Addr{Kind: HostSide, Network: network, Host: host}
	if host == 0 {
		if cli.Provision.Wire == "" && cli.Provision.Plug == "" && cli.Provision.Platform == network && network != vocab.Host {
			a.Platform = cli.Platform // a network the client's platform made
		} else if !network.Lab(1) {
			return Addr{}, fmt.Errorf("no host-side address on network %s", cli.Network)
		}
	}
	return a, nil
}

// toTheMachine says how a cell puts client cli of a server published on
// the machine there: on network host where its platform, with its own
// factors, is then in the machine's namespace (and when both take the
// cell's network factor, the server alone can take the published
// network: docs/networks.md, "Published ports"), else as a host process.
func toTheMachine(srv, cli Role, factors map[string]string) string {
	if !onTheMachine(cli) {
		processes := platform.NamesWhere(platform.Driver.Processes)
		return fmt.Sprintf("set %s.%s: %s and %s.%s: %s", cli.Name, vocab.FPlatform, strings.Join(processes, " or "), cli.Name, vocab.FNetwork, vocab.Host)
	}
	_, srvOwn := factors[srv.Name+"."+vocab.FNetwork]
	_, cliOwn := factors[cli.Name+"."+vocab.FNetwork]
	if srv.Name == cli.Name || srvOwn || cliOwn {
		return fmt.Sprintf("set %s.%s: %s", cli.Name, vocab.FNetwork, vocab.Host)
	}
	return fmt.Sprintf("put the %s alone on it, %s.%s: [%s], with the %s on network %s (the default), or set %s.%s: %s",
		srv.Name, srv.Name, vocab.FNetwork, srv.Network, cli.Name, vocab.Host, cli.Name, vocab.FNetwork, vocab.Host)
}

// onTheMachine reports whether role r's platform, with r's own factors,
// gives an instance on network host in the machine's own namespace.
func onTheMachine(r Role) bool {
	h := Role{Name: r.Name, Platform: r.Platform, Driver: r.Driver, Network: vocab.Host, Options: r.Options}
	var err error
	if h.Provision, err = r.Driver.ProvisionWith(vocab.Host, 1, r.Options); err != nil {
		return false
	}
	if comb := r.Driver.Caps.Own.Combine; comb != nil && comb(vocab.Host, r.Options) != nil {
		return false
	}
	return h.RootNS()
}
