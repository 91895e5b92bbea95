package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// routeWait bounds how long a client waits for its server's host to
// answer: a cluster's overlay learns a new task's address by gossip, and
// a client started at once can find no route to it for a moment.
const routeWait = 20 * time.Second

// waitForRoute waits until target's host answers an ICMP echo, so the
// path to it is up (neighbour and overlay forwarding entries made) before
// the workload's first connection — which would otherwise fail with "no
// route to host". Nothing reaches the server's port. Where the agent may
// not open a raw socket, or the address is not IPv4, it does not wait.
func waitForRoute(ctx context.Context, target string) error {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host).To4()
	if ip == nil || ip.IsLoopback() {
		return nil
	}
	c, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return nil // no CAP_NET_RAW: the workload will tell
	}
	defer c.Close()
	id := uint16(os.Getpid())
	deadline := time.Now().Add(routeWait)
	buf := make([]byte, 1500)
	var last error
	for seq := uint16(1); time.Now().Before(deadline); seq++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := c.WriteTo(echo(id, seq), &net.IPAddr{IP: ip}); err != nil {
			last = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					last = err
				}
				break
			}
			// An echo reply (type 0) to this id, from the target.
			if a, ok := from.(*net.IPAddr); ok && a.IP.Equal(ip) && n >= 8 && buf[0] == 0 && binary.BigEndian.Uint16(buf[4:]) == id {
				return nil
			}
		}
	}
	if last == nil {
		last = errors.New("no echo reply")
	}
	return fmt.Errorf("the server's host %s did not answer within %s (%v): no path to it", ip, routeWait, last)
}

// echo is an ICMP echo request.
func echo(id, seq uint16) []byte {
	b := make([]byte, 16)
	b[0] = 8 // echo request
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	copy(b[8:], "ctrbench")
	var sum uint32
	for i := 0; i < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(b[2:], ^uint16(sum))
	return b
}
