package workloads

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// fakeUDPServer speaks the UDP workloads' control protocol: it sends
// hello with its UDP port, serves datagrams with serve until the client's
// final message, then answers with report(that message).
func fakeUDPServer(t *testing.T, nonce uint64, serve func(uc *net.UDPConn), report func(done json.RawMessage) any) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); uc.Close() })
	go serve(uc)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		ctl := newCtlConn(c)
		defer ctl.Close()
		_ = ctl.send(udpHello{Port: uc.LocalAddr().(*net.UDPAddr).Port, Nonce: nonce})
		var done json.RawMessage
		if ctl.recv(&done, 0) != nil {
			return
		}
		_ = ctl.send(report(done))
	}()
	return ln.Addr().String()
}

func TestUDPRRLoopback(t *testing.T) {
	p := values(t, "net.udp_rr", map[string]string{"duration": "300ms", "request_size": "32", "response_size": "200"})
	addr, done := serve(t, udpRRServer, p)
	obs, _, err := udpRRClient(context.Background(), p, workload.Env{Target: addr})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
	m := obsMap(obs)
	if m["transactions_per_sec"] < 100 || m["latency_p50"] <= 0 || m["latency_p50"] > m["latency_p99"] || m["loss_pct"] > 1 {
		t.Fatalf("implausible %v", m)
	}
}

// A server that answers only some requests costs loss, not the trial; a
// server whose answers or counts are wrong fails it.
func TestUDPRRLossAndValidation(t *testing.T) {
	// The fake answers each request with answer's datagram (none if nil)
	// and reports its counts through lie.
	type counts struct{ received, answered atomic.Uint64 }
	run := func(t *testing.T, answer func(seq uint64, req []byte) []byte, lie func(udpRRReport) udpRRReport) (map[string]float64, error) {
		var c counts
		addr := fakeUDPServer(t, 0, func(uc *net.UDPConn) {
			buf := make([]byte, 100)
			for {
				n, from, err := uc.ReadFromUDP(buf)
				if err != nil {
					return
				}
				c.received.Add(1)
				if resp := answer(getSeq(buf[:n]), buf[:n]); resp != nil {
					uc.WriteToUDP(resp, from)
					c.answered.Add(1)
				}
			}
		}, func(json.RawMessage) any {
			return lie(udpRRReport{Received: c.received.Load(), Answered: c.answered.Load()})
		})
		p := values(t, "net.udp_rr", map[string]string{"duration": "500ms", "request_size": "8", "response_size": "8", "timeout": "50ms"}) // a timeout no loaded machine reaches: only the 4th is lost
		obs, _, err := udpRRClient(context.Background(), p, workload.Env{Target: addr})
		return obsMap(obs), err
	}
	echo := func(seq uint64, req []byte) []byte { return append([]byte(nil), req...) }
	honest := func(r udpRRReport) udpRRReport { return r }

	t.Run("loss", func(t *testing.T) {
		m, err := run(t, func(seq uint64, req []byte) []byte {
			if seq%4 == 0 {
				return nil
			}
			return echo(seq, req)
		}, honest)
		if err != nil {
			t.Fatal(err)
		}
		if m["loss_pct"] < 20 || m["loss_pct"] > 30 || m["transactions_per_sec"] <= 0 {
			t.Errorf("every 4th lost: %v", m)
		}
		// loss_pct is a share of the requests sent, so over pairs it can
		// be weighted by them.
		if lost := m["loss_pct"] * m["sent"] / 100; m["sent"] < 4 || math.Abs(lost-math.Round(lost)) > 1e-6 {
			t.Errorf("loss_pct %v is no share of %v requests sent", m["loss_pct"], m["sent"])
		}
	})
	for name, c := range map[string]struct {
		answer func(uint64, []byte) []byte
		lie    func(udpRRReport) udpRRReport
		want   string
	}{
		"over-reports received":  {echo, func(r udpRRReport) udpRRReport { r.Received += 10; r.Answered += 10; return r }, "the server received"},
		"under-reports answered": {echo, func(r udpRRReport) udpRRReport { r.Answered /= 2; return r }, "the client received"},
		"wrong size":             {func(seq uint64, req []byte) []byte { return append(req, 0) }, honest, "a response of 9 bytes"},
		"future sequence": {func(seq uint64, req []byte) []byte {
			putSeq(req, seq+1)
			return echo(seq, req)
		}, honest, "only 1 requests were sent"},
		"bad requests": {echo, func(r udpRRReport) udpRRReport { r.BadSize = 1; return r }, "not 8-byte requests"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, c.answer, c.lie)
			if err == nil || !strings.Contains(err.Error(), "validation") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a validation error with %q, got %v", c.want, err)
			}
		})
	}
}

// The real server counts datagrams of the wrong size and does not answer
// them; the client's report then fails validation.
func TestUDPRRServerCountsBadRequests(t *testing.T) {
	p := values(t, "net.udp_rr", map[string]string{"request_size": "8"})
	addr, done := serve(t, udpRRServer, p)
	ctl, err := dialCtl(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	var hello udpHello
	if err := ctl.recv(&hello, ctlTimeout); err != nil {
		t.Fatal(err)
	}
	uc, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: hello.Port})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	buf := make([]byte, 16)
	uc.Write(buf[:8])
	if n, err := uc.Read(buf); err != nil || n != 1 {
		t.Fatalf("response %d bytes, %v", n, err)
	}
	uc.Write(buf[:3])
	uc.Write(buf[:8])
	uc.Read(buf) // the answer to the last: the short one was read before it
	ctl.send(udpRRDone{Sent: 3})
	var rep udpRRReport
	if err := ctl.recv(&rep, ctlTimeout); err != nil {
		t.Fatal(err)
	}
	if rep != (udpRRReport{Received: 2, Answered: 2, BadSize: 1}) {
		t.Errorf("report %+v", rep)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
}
