package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// The published mode between emulated hosts (S3's network path: two
// Docker containers on two hosts, "NAT networking principles used for all
// container traffic"): each host has a bridge of its own, ifNAT with
// its pool block subnets.HostNAT+h (198.18.<150+h>.1/24 in the default pool), its subnet masqueraded as it leaves the host
// and routed to by no other host, as Docker's default bridge is; a server
// on it is reached through the ports the lab publishes on its host's
// underlay address (Publish: DNAT in the host's namespace, as docker run
// -p writes in the machine's). The rules are ctrbench's, in namespaces it
// made, written as Docker writes its own (package firewall).
const (
	ifNAT = "ctbnat0"
	// natPorts are where a host's published ports are taken from: Docker's
	// range for the ports it chooses (the kernel's ephemeral range).
	natPortFirst, natPortLast = 32768, 60999
)

func (l *Lab) natAddr(host, n int) string { return l.pool.IP4(subnets.HostNAT+host, n) }

// buildNAT makes each host's NAT bridge and its masquerade rule.
func (l *Lab) buildNAT(context.Context) error {
	for h := 1; h <= l.hosts; h++ {
		hh, err := handleAt(l.HostNS(h))
		if err != nil {
			return err
		}
		addr := &net.IPNet{IP: net.ParseIP(l.natAddr(h, 1)).To4(), Mask: net.CIDRMask(24, 32)}
		_, err = addBridge(hh, ifNAT, addr, 1500)
		hh.Close()
		if err == nil {
			err = firewall.Masquerade(l.HostNS(h), l.natAddr(h, 0)+"/24", ifNAT)
		}
		if err != nil {
			return fmt.Errorf("netlab: published mode on host %d: %w", h, err)
		}
	}
	l.setInfo("published", fmt.Sprintf("%s with %s on host 1 (a /24 per host), masqueraded as it leaves; servers' ports DNATed from the hosts' underlay addresses (iptables in the hosts' namespaces)", ifNAT, l.natAddr(1, 1)+"/24"))
	l.notef("published mode: %s with %s on host 1 (a /24 per host), masqueraded as it leaves, servers' ports published on the hosts' underlay addresses (DNAT), as Docker's default bridge and docker run -p", ifNAT, l.natAddr(1, 1)+"/24")
	return nil
}

// Publish publishes, on host's underlay address, the ports (each "tcp" or
// "udp") of the server at ip on host's NAT bridge (Attach with mode
// published), each at a port of the lab's choice (one number for a port on
// both protocols), and returns where:
// "PORT/PROTO" → "HOST:PORT". unpublish takes them back (safe twice, and
// after Close).
func (l *Lab) Publish(host int, ip string, ports []vocab.Port) (map[string]string, func() error, error) {
	if err := l.check(vocab.Published, host); err != nil {
		return nil, nil, err
	}
	if host < 1 {
		return nil, nil, errors.New("netlab: the lab publishes ports on emulated hosts only")
	}
	hostIP, nsPath := l.underlayAddr(host), l.HostNS(host)
	out := map[string]string{}
	var undo []func() error
	unpublish := func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- { // rules first, then their ports
			errs = append(errs, undo[i]())
		}
		undo = nil
		return errors.Join(errs...)
	}
	// A port number on two protocols is published at one number (iperf3
	// sends its UDP datagrams to its TCP port's number).
	byNumber := map[int]int{}
	for _, p := range ports {
		hp, shared := byNumber[p.Number]
		if !shared {
			var err error
			if hp, err = l.allocPort(host); err != nil {
				return nil, nil, errors.Join(err, unpublish())
			}
			byNumber[p.Number] = hp
		}
		to := net.JoinHostPort(ip, fmt.Sprint(p.Number))
		if !shared {
			undo = append(undo, func() error { l.freePort(host, hp); return nil })
		}
		if err := firewall.Publish(nsPath, hostIP, hp, p.Proto, to); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("netlab: publishing %s of %s on host %d: %w", p, ip, host, err), unpublish())
		}
		undo = append(undo, func() error {
			if l.isClosed() {
				return nil // the rules went with the host's namespace
			}
			return firewall.Unpublish(nsPath, hostIP, hp, p.Proto, to)
		})
		out[p.String()] = net.JoinHostPort(hostIP, fmt.Sprint(hp))
	}
	return out, unpublish, nil
}

// allocPort takes host's lowest free port to publish on.
func (l *Lab) allocPort(host int) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := takeLowest(l.published, host, natPortFirst, natPortLast); ok {
		return p, nil
	}
	return 0, fmt.Errorf("netlab: every port from %d to %d of host %d is published", natPortFirst, natPortLast, host)
}

func (l *Lab) freePort(host, port int) {
	l.mu.Lock()
	delete(l.published[host], port)
	l.mu.Unlock()
}
