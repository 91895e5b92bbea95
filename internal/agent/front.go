package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// frontWait bounds how long a client waits for its server's front (a
// Kubernetes Service) to carry a connection: kube-proxy writes a new
// Service's rules within its sync period, seconds at most.
var frontWait = 30 * time.Second

// listenProbe accepts connections on port, in the namespace of a server
// whose platform fronts it, and closes each at once, until ctx ends: a
// client that gets one accepted through the front knows the front's rules
// are written — for the workload's port too, which the same Service
// carries and the same rule update wrote — without a connection the
// workload would take for its client's.
func listenProbe(ctx context.Context, bind string, port int) (func(), error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening on the probe port %d: %w", port, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return func() { ln.Close() }, nil
}

// waitForConnect connects to addr (the server's probe port through its
// front) until a connection is accepted: until then the front's rules may
// not be written, and a connection to it goes nowhere or is refused.
func waitForConnect(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, frontWait)
	defer cancel()
	var last error
	for tries := 0; ; tries++ {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if tries == 0 || errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			return fmt.Errorf("the server's front at %s accepted no connection within %s (%d tries; last: %v)", addr, frontWait, tries+1, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
