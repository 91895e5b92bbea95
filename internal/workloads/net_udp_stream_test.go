package workloads

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

func TestParseBitrate(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "500K": 5e5, "100M": 1e8, "1.5G": 1.5e9, "1g": 1e9, "64": 64} {
		if got, err := parseBitrate(in); err != nil || got != want {
			t.Errorf("parseBitrate(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
}

func TestUDPStreamLoopback(t *testing.T) {
	t.Run("paced", func(t *testing.T) {
		p := values(t, "net.udp_stream", map[string]string{"duration": "400ms", "bitrate": "100M"})
		addr, done := serve(t, udpStreamServer, p)
		obs, _, err := udpStreamClient(context.Background(), p, workload.Env{Target: addr})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("server: %v", err)
		}
		m := obsMap(obs)
		if m["offered_mbps"] < 80 || m["offered_mbps"] > 110 {
			t.Errorf("offered %.1f Mbit/s at a 100M target", m["offered_mbps"])
		}
		// 100 Mbit/s on loopback arrives nearly whole; what matters here is
		// that the three numbers agree: received = offered × (1 − loss).
		// (A busy machine may drop a few datagrams at the receiver.)
		if m["loss_pct"] > 20 || m["received_mbps"] < 60 || m["received_mbps"] > 130 {
			t.Errorf("implausible %v", m)
		}
		if want := m["offered_mbps"] * (1 - m["loss_pct"]/100); math.Abs(m["received_mbps"]-want) > 0.05*want {
			t.Errorf("received %.2f Mbit/s disagrees with offered %.2f at %.2f%% loss (want %.2f)", m["received_mbps"], m["offered_mbps"], m["loss_pct"], want)
		}
	})
	t.Run("unlimited", func(t *testing.T) {
		p := values(t, "net.udp_stream", map[string]string{"duration": "200ms", "bitrate": "0", "message_size": "8000"})
		addr, done := serve(t, udpStreamServer, p)
		obs, _, err := udpStreamClient(context.Background(), p, workload.Env{Target: addr})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("server: %v", err)
		}
		m := obsMap(obs)
		if m["offered_mbps"] < 100 || m["received_mbps"] <= 0 || m["loss_pct"] < 0 || m["loss_pct"] >= 100 {
			t.Errorf("implausible %v", m)
		}
	})
}

// The real server finds duplicates, foreign datagrams and wrong sizes.
func TestUDPStreamServerTallies(t *testing.T) {
	p := values(t, "net.udp_stream", map[string]string{"message_size": "100"})
	addr, done := serve(t, udpStreamServer, p)
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
	msg := func(seq, nonce uint64, size int) []byte {
		b := make([]byte, size)
		binary.LittleEndian.PutUint64(b, seq)
		binary.LittleEndian.PutUint64(b[8:], nonce)
		return b
	}
	for _, b := range [][]byte{
		msg(0, hello.Nonce, 100), msg(2, hello.Nonce, 100), msg(1, hello.Nonce, 100), // 1 reordered
		msg(2, hello.Nonce, 100),   // duplicate
		msg(3, hello.Nonce+1, 100), // not this trial's
		msg(3, hello.Nonce, 99),    // wrong size
		msg(1<<40, hello.Nonce, 100),
	} {
		uc.Write(b)
		time.Sleep(time.Millisecond)
	}
	ctl.send(udpStreamDone{Sent: 4, Bytes: 400})
	var rep udpStreamReport
	if err := ctl.recv(&rep, ctlTimeout); err != nil {
		t.Fatal(err)
	}
	if rep.Received != 3 || rep.Bytes != 300 || rep.Duplicate != 1 || rep.Corrupt != 3 || rep.Reordered != 1 || rep.MaxSeq != 2 || rep.Window <= 0 {
		t.Errorf("report %+v", rep)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
}

func TestUDPStreamValidation(t *testing.T) {
	for name, c := range map[string]struct {
		lie  func(done udpStreamDone, r udpStreamReport) udpStreamReport
		want string
	}{
		"over-reports": {func(d udpStreamDone, r udpStreamReport) udpStreamReport {
			r.Received, r.Bytes = d.Sent+1, (d.Sent+1)*100
			return r
		}, "the server received"},
		"duplicates": {func(d udpStreamDone, r udpStreamReport) udpStreamReport { r.Duplicate = 1; return r }, "twice"},
		"corrupt":    {func(d udpStreamDone, r udpStreamReport) udpStreamReport { r.Corrupt = 2; return r }, "wrong size"},
		"bytes":      {func(d udpStreamDone, r udpStreamReport) udpStreamReport { r.Bytes--; return r }, "bytes in"},
		"beyond":     {func(d udpStreamDone, r udpStreamReport) udpStreamReport { r.MaxSeq = d.Sent; return r }, "sent only"},
		"nothing": {func(d udpStreamDone, r udpStreamReport) udpStreamReport {
			return udpStreamReport{}
		}, "no receive rate"},
	} {
		t.Run(name, func(t *testing.T) {
			addr := fakeUDPServer(t, 42, func(uc *net.UDPConn) {}, func(raw json.RawMessage) any {
				var d udpStreamDone
				json.Unmarshal(raw, &d)
				// What an honest server would say, all datagrams in 100ms.
				honest := udpStreamReport{Received: d.Sent, Bytes: d.Sent * 100, Window: int64(100 * time.Millisecond), MaxSeq: d.Sent - 1}
				return c.lie(d, honest)
			})
			p := values(t, "net.udp_stream", map[string]string{"duration": "100ms", "bitrate": "10M", "message_size": "100"})
			_, _, err := udpStreamClient(context.Background(), p, workload.Env{Target: addr})
			if err == nil || !strings.Contains(err.Error(), "validation") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a validation error with %q, got %v", c.want, err)
			}
		})
	}
}
