package workloads

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func TestTransferLoopback(t *testing.T) {
	for _, conc := range []string{"1", "3"} {
		t.Run("concurrency "+conc, func(t *testing.T) {
			p := values(t, "net.transfer", map[string]string{"size": "1MB", "flows": "6", "concurrency": conc})
			addr, done := serve(t, transferServer, p)
			var hs []result.Histogram
			obs, _, err := transferClient(context.Background(), p, workload.Env{Target: addr, Histogram: func(h result.Histogram) { hs = append(hs, h) }})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("server: %v", err)
			}
			m := obsMap(obs)
			if m["fct_p50"] <= 0 || m["fct_p50"] > m["fct_p99"] || m["fct_mean"] > m["fct_p99"] || m["throughput"] <= 0 {
				t.Fatalf("implausible %v", m)
			}
			// The flows come back as the histogram fct_p99 was read from.
			if len(hs) != 1 || hs[0].Metric != "fct" || hs[0].Unit != "ns" {
				t.Fatalf("histograms %+v, want one of fct in ns", hs)
			}
			h, err := hdr.Decode(hs[0].Data)
			if err != nil {
				t.Fatal(err)
			}
			if p99, _ := hdr.Percentile(h, 99, "ns", "ms"); h.TotalCount() != 6 || p99 != m["fct_p99"] {
				t.Errorf("histogram of %d flows with p99 %v ms; want 6 flows, fct_p99 %v", h.TotalCount(), p99, m["fct_p99"])
			}
			if conc == "1" {
				// One after another: 6 MB over the sum of the completion
				// times, give or take the gaps between flows.
				implied := 8e6 / (m["fct_mean"] * 1e-3) / 1e9
				if r := m["throughput"] / implied; r < 0.5 || r > 1.01 {
					t.Errorf("throughput %.2f Gbit/s vs %.2f implied by fct_mean", m["throughput"], implied)
				}
			}
		})
	}
}

// Timed: flows keep starting until the duration has passed, the server
// takes the end marker for what it is (not a flow), and every flow
// completed is counted in flows, the histogram and the throughput.
func TestTransferTimed(t *testing.T) {
	for _, conc := range []string{"1", "3"} {
		t.Run("concurrency "+conc, func(t *testing.T) {
			p := values(t, "net.transfer", map[string]string{"size": "256KiB", "duration": "300ms", "flows": "1", "concurrency": conc})
			addr, done := serve(t, transferServer, p)
			var hs []result.Histogram
			start := time.Now()
			obs, _, err := transferClient(context.Background(), p, workload.Env{Target: addr, Histogram: func(h result.Histogram) { hs = append(hs, h) }})
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("server: %v", err)
			}
			m := obsMap(obs)
			// At least the duration; the upper bound (loose: a busy
			// machine stretches a run) says the run is timed, not sized.
			if took < 300*time.Millisecond || took > 15*time.Second {
				t.Errorf("a 300ms timed run took %v", took)
			}
			// flows=1 is ignored: many 256 KiB flows fit in 300 ms on loopback.
			if m["flows"] < 10 {
				t.Fatalf("%v flows in 300ms", m["flows"])
			}
			h, err := hdr.Decode(hs[0].Data)
			if err != nil {
				t.Fatal(err)
			}
			if float64(h.TotalCount()) != m["flows"] {
				t.Errorf("histogram of %d flows, flows metric %v", h.TotalCount(), m["flows"])
			}
			wantGbit := m["flows"] * 256 * 1024 * 8 / took.Seconds() / 1e9
			if r := m["throughput"] / wantGbit; r < 0.9 || r > 2 {
				t.Errorf("throughput %v Gbit/s, flows over the run imply %v", m["throughput"], wantGbit)
			}
		})
	}
}

// A connection that starts with neither a flow's bytes nor the whole end
// marker fails a timed server.
func TestTransferTimedBadMarker(t *testing.T) {
	p := values(t, "net.transfer", map[string]string{"size": "1KiB", "duration": "1s"})
	addr, done := serve(t, transferServer, p)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("ctrbench-trans"))
	conn.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "neither a flow") {
		t.Fatalf("server error %v, want the bad marker", err)
	}
}

// A server acknowledging fewer bytes than were sent fails the trial.
func TestTransferDetectsShortAck(t *testing.T) {
	addr := acceptEach(t, func(c net.Conn) {
		defer c.Close()
		n, _ := io.CopyN(io.Discard, c, 1000)
		if n == 1000 {
			n = 999 // lost one, says the server
		}
		binary.Write(c, binary.BigEndian, uint64(n))
		io.Copy(io.Discard, c)
	})
	p := values(t, "net.transfer", map[string]string{"size": "1000", "flows": "3"})
	_, _, err := transferClient(context.Background(), p, workload.Env{Target: addr})
	if err == nil || !strings.Contains(err.Error(), "validation: the server acknowledged 999 bytes, the client sent 1000") {
		t.Fatalf("want a validation error, got %v", err)
	}
}

// The server fails a flow that ends short or brings more than size.
func TestTransferServerValidates(t *testing.T) {
	for name, c := range map[string]struct {
		send int
		want string
	}{
		"short": {999, "ended after 999 of 1000 bytes"},
		"long":  {1001, "sent more than 1000 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			p := values(t, "net.transfer", map[string]string{"size": "1000", "flows": "1"})
			addr, done := serve(t, transferServer, p)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conn.Write(make([]byte, c.send))
			conn.(*net.TCPConn).CloseWrite()
			var ack uint64
			binary.Read(conn, binary.BigEndian, &ack)
			conn.Close()
			if err := <-done; err == nil || !strings.Contains(err.Error(), "validation") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("server: want %q, got %v", c.want, err)
			}
		})
	}
}
