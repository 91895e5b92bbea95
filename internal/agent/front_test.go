package agent

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProbeAndWaitConnect: a server's probe port accepts and closes
// connections until it is stopped; a client's wait ends at the first
// accepted connection, and fails, saying where and how long, when none is
// accepted in time.
func TestProbeAndWaitConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx := context.Background()
	stop, err := listenProbe(ctx, "127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitForConnect(ctx, addr); err != nil {
		t.Fatalf("waiting for a listening probe: %v", err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("a probe connection read %d bytes, %v; want it closed by the server at once", n, err)
	}
	c.Close()
	stop()
	defer func(w time.Duration) { frontWait = w }(frontWait)
	frontWait = 300 * time.Millisecond
	err = waitForConnect(ctx, addr)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "300ms") {
		t.Errorf("waiting for a stopped probe: %v; want an error naming %s and the wait", err, addr)
	}
}
