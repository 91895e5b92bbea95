package workloads

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

func TestRTTHistPercentiles(t *testing.T) {
	// 1µs … 10000µs, once each: every percentile is known exactly.
	h := newDurations(rttHistogram, rttMax)
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != 10000 || h.Mean() != 5000500*time.Nanosecond {
		t.Fatalf("count %d mean %s", h.Count(), h.Mean())
	}
	for q, want := range map[float64]float64{50: 5000, 99: 9900, 99.9: 9990, 100: 10000} {
		got := float64(h.Quantile(q)) / 1e3
		if math.Abs(got-want)/want > 0.001 { // 3 significant digits
			t.Errorf("p%g = %.3fµs, want %gµs ±0.1%%", q, got, want)
		}
	}
	// Bimodal: 990 fast, 10 slow. p99 is still fast, p99.9 slow.
	h = newDurations(rttHistogram, rttMax)
	for i := range 1000 {
		d := 10 * time.Microsecond
		if i%100 == 0 {
			d = time.Millisecond
		}
		h.Record(d)
	}
	m := obsMap(h.Observations(rttMetrics("")))
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.001 }
	if !near(m["latency_p50"], 10) || !near(m["latency_p99"], 10) || !near(m["latency_p999"], 1000) || !near(m["latency_mean"], 19.9) {
		t.Errorf("bimodal observations %v", m)
	}
	// Out of range values are clamped, not lost.
	h = newDurations(rttHistogram, rttMax)
	h.Record(0)
	h.Record(2 * rttMax)
	if h.Count() != 2 || h.Quantile(100) < rttMax*999/1000 {
		t.Errorf("clamping: count %d max %s", h.Count(), h.Quantile(100))
	}
}

func TestSeqBytes(t *testing.T) {
	b := make([]byte, 1)
	putSeq(b, 0x1234)
	if b[0] != 0x34 || !seqMatches(b, 0x1234) || !seqMatches(b, 0x34) || seqMatches(b, 0x35) {
		t.Errorf("1-byte sequence %x", b)
	}
	b = make([]byte, 20)
	putSeq(b, 1<<40+7)
	if getSeq(b) != 1<<40+7 || seqMatches(b, 7) {
		t.Errorf("8-byte sequence %x", b)
	}
}

func TestTCPRRLoopback(t *testing.T) {
	p := values(t, "net.tcp_rr", map[string]string{"duration": "300ms"})
	addr, done := serve(t, tcpRRServer, p)
	obs, _, err := tcpRRClient(context.Background(), p, workload.Env{Target: addr})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
	m := obsMap(obs)
	if m["transactions_per_sec"] < 100 || m["latency_p50"] <= 0 || m["latency_p50"] > m["latency_p99"] || m["latency_p99"] > m["latency_p999"] {
		t.Fatalf("implausible %v", m)
	}
	// One transaction in flight: rate × mean round trip is about 1 (less
	// by the time between transactions).
	if x := m["transactions_per_sec"] * m["latency_mean"] / 1e6; x < 0.5 || x > 1.01 {
		t.Errorf("rate %.0f/s and mean %.1fµs disagree (product %.2f)", m["transactions_per_sec"], m["latency_mean"], x)
	}
}

func TestTCPRRBurstAndBuffers(t *testing.T) {
	for name, params := range map[string]map[string]string{
		"burst":  {"burst": "16", "request_size": "100", "response_size": "1000", "socket_buffer": "256KiB"},
		"nagle":  {"burst": "4", "nodelay": "false"},
		"nowait": {"burst": "64", "request_size": "64KiB", "response_size": "64KiB", "socket_buffer": "16KiB"}, // 8 MiB in flight: buffers full both ways
	} {
		t.Run(name, func(t *testing.T) {
			params["duration"] = "200ms"
			p := values(t, "net.tcp_rr", params)
			addr, done := serve(t, tcpRRServer, p)
			obs, _, err := tcpRRClient(context.Background(), p, workload.Env{Target: addr})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("server: %v", err)
			}
			if m := obsMap(obs); m["transactions_per_sec"] <= 0 || m["latency_p50"] <= 0 {
				t.Errorf("implausible %v", m)
			}
		})
	}
}

// fakeRRServer answers 8-byte requests with 8-byte responses through
// misbehave, which returns the responses to send for request seq, and
// reports count at the end.
func fakeRRServer(t *testing.T, misbehave func(seq uint64, req []byte) [][]byte, count func(n uint64) uint64) string {
	t.Helper()
	return acceptEach(t, func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		req := make([]byte, 8)
		var n uint64
		for {
			if _, err := io.ReadFull(r, req); err != nil {
				break
			}
			for _, resp := range misbehave(n, req) {
				c.Write(resp)
			}
			n++
		}
		binary.Write(c, binary.BigEndian, count(n))
	})
}

func TestTCPRRValidation(t *testing.T) {
	old := rrGrace
	rrGrace = 300 * time.Millisecond
	defer func() { rrGrace = old }()
	echo := func(seq uint64, req []byte) [][]byte { return [][]byte{append([]byte(nil), req...)} }
	honest := func(n uint64) uint64 { return n }
	var held []byte
	for name, c := range map[string]struct {
		burst     string
		misbehave func(uint64, []byte) [][]byte
		count     func(uint64) uint64
		want      string
	}{
		"under-reports": {"1", echo, func(n uint64) uint64 { return n - 1 }, "server answered"},
		"drops": {"1", func(seq uint64, req []byte) [][]byte {
			if seq == 5 {
				return nil
			}
			return echo(seq, req)
		}, honest, "no response to request 5"},
		"reorders": {"4", func(seq uint64, req []byte) [][]byte {
			switch seq {
			case 3:
				held = append([]byte(nil), req...)
				return nil
			case 4:
				return [][]byte{append([]byte(nil), req...), held}
			}
			return echo(seq, req)
		}, honest, "response 3 carries sequence number 4"},
		"repeats": {"1", func(seq uint64, req []byte) [][]byte {
			if seq == 2 {
				return [][]byte{req, req}
			}
			return echo(seq, req)
		}, honest, "carries sequence number 2"},
		"short response": {"1", func(seq uint64, req []byte) [][]byte {
			if seq == 7 {
				return [][]byte{req[:4]}
			}
			return echo(seq, req)
		}, honest, "validation"},
	} {
		t.Run(name, func(t *testing.T) {
			addr := fakeRRServer(t, c.misbehave, c.count)
			p := values(t, "net.tcp_rr", map[string]string{"duration": "100ms", "burst": c.burst, "request_size": "8", "response_size": "8"})
			_, _, err := tcpRRClient(context.Background(), p, workload.Env{Target: addr})
			if err == nil || !strings.Contains(err.Error(), "validation") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a validation error with %q, got %v", c.want, err)
			}
		})
	}
}

// The server checks the requests' sequence numbers too.
func TestTCPRRServerValidates(t *testing.T) {
	p := values(t, "net.tcp_rr", map[string]string{"request_size": "8"})
	addr, done := serve(t, tcpRRServer, p)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := make([]byte, 8)
	c.Write(req) // 0
	putSeq(req, 2)
	c.Write(req) // 2, not 1
	if err := <-done; err == nil || !strings.Contains(err.Error(), "validation: request 1 carries sequence number 2") {
		t.Fatalf("server: %v", err)
	}
}

// Cancelling the context ends both roles promptly.
func TestTCPRRCancel(t *testing.T) {
	p := values(t, "net.tcp_rr", map[string]string{"duration": "1h"})
	addr, done := serve(t, tcpRRServer, p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := tcpRRClient(ctx, p, workload.Env{Target: addr})
	// Promptness, not a timing: far below the run's hour.
	if err == nil || time.Since(start) > 30*time.Second {
		t.Fatalf("client after cancel: %v in %s", err, time.Since(start))
	}
	select {
	case <-done: // the server sees the connection end
	case <-time.After(5 * time.Second):
		t.Fatal("server still running")
	}
}
