package workloads

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func testPlan(t *testing.T, target string, user map[string]string) loadPlan {
	t.Helper()
	p := values(t, "http.get", user)
	size := int(p.Int("size"))
	return loadPlan{target: target, path: "/pong?size=" + p.String("size"), size: size, want: payload(size), conns: int(p.Int("concurrency")),
		dur: p.Duration("duration"), rate: p.Float("rate"), timeout: p.Duration("request_timeout"), newLat: func() *latencies { return newLatencies(p) }}
}

// A server that closes every connection after its response (Connection:
// close): every response counts, each request dials again.
func TestLoadReconnectsAfterConnectionClose(t *testing.T) {
	body := payload(100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	for _, rate := range []string{"0", "300"} {
		tally, _, err := runLoad(context.Background(), testPlan(t, strings.TrimPrefix(srv.URL, "http://"), map[string]string{"duration": "300ms", "size": "100", "concurrency": "3", "rate": rate}))
		if err != nil {
			t.Fatal(err)
		}
		if tally.ok < 20 || tally.errs != 0 {
			t.Errorf("rate %s: %d correct, %d errors (last %q); want many correct and none failed", rate, tally.ok, tally.errs, tally.lastErr)
		}
	}
}

// A server that never answers: every request times out, is counted as an
// error, and the run still ends about when it should.
func TestLoadTimesOutAStalledServer(t *testing.T) {
	var held []net.Conn // open, never answered
	var mu sync.Mutex
	addr := acceptEach(t, func(c net.Conn) { mu.Lock(); held = append(held, c); mu.Unlock() })
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	start := time.Now()
	tally, _, err := runLoad(context.Background(), testPlan(t, addr, map[string]string{"duration": "200ms", "size": "10", "concurrency": "2", "request_timeout": "100ms"}))
	if err != nil {
		t.Fatal(err)
	}
	// Promptness, not a timing: a request that waited for the stalled
	// server would hold the run for ever.
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v", took)
	}
	if tally.ok != 0 || tally.errs < 2 || !strings.Contains(tally.lastErr, "no full response within 100ms") {
		t.Errorf("%d correct, %d errors (last %q); want only timeouts", tally.ok, tally.errs, tally.lastErr)
	}
}

// Nothing listening: every request fails to connect, and says so; a
// closed loop tries again at its scan's pace, not in a tight loop (which
// made 1,704 refusals in 100 ms here).
func TestLoadCountsRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tally, _, err := runLoad(context.Background(), testPlan(t, addr, map[string]string{"duration": "100ms", "size": "10", "concurrency": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	if tally.ok != 0 || tally.errs == 0 || !strings.Contains(tally.lastErr, "connection refused") {
		t.Errorf("%d correct, %d errors (last %q); want refusals", tally.ok, tally.errs, tally.lastErr)
	}
	// Two connections, a retry each per scan of at least 10 ms, over
	// 100 ms: at most about 2 × (1 + 100/10).
	if tally.errs > 30 {
		t.Errorf("%d refusals in 100 ms from 2 connections: the loop re-dials without pause", tally.errs)
	}
}

// A response cut off by the server closing counts as an error, never as
// a response.
func TestLoadCountsTruncatedResponses(t *testing.T) {
	addr := acceptEach(t, func(c net.Conn) {
		buf := make([]byte, 1024)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
		c.Close()
	})
	tally, _, err := runLoad(context.Background(), testPlan(t, addr, map[string]string{"duration": "100ms", "size": "10", "concurrency": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	if tally.ok != 0 || tally.errs == 0 || !strings.Contains(tally.lastErr, "closed after") {
		t.Errorf("%d correct, %d errors (last %q); want truncations", tally.ok, tally.errs, tally.lastErr)
	}
}

// acceptEach listens on loopback and hands every connection to handle, in
// a goroutine of its own, until the test ends.
func acceptEach(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}
