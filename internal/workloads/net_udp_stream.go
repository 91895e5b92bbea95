package workloads

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func init() {
	workload.Register(&workload.Spec{
		Type:    "net.udp_stream",
		Summary: "UDP datagrams from client to server at an offered rate (netperf UDP_STREAM); rate received and loss",
		Params: []workload.Param{
			workload.P("duration", workload.Duration, "5s", "how long the client sends").Range(0.05, 86400),
			workload.P("message_size", workload.Size, "1472B", "UDP payload bytes per datagram (1472 fills a 1500-byte MTU); at least 16 for the sequence number and trial tag").Range(16, 65507),
			workload.P("bitrate", workload.String, "1G", "offered payload rate in bit/s: 0 (as fast as possible), 500K, 100M, 1.5G (K, M, G are powers of 1000)").
				Matching(`[0-9]+(\.[0-9]+)?[KMGkmg]?`, "a bitrate such as 0 (unlimited), 500K, 100M or 1.5G"),
		},
		Metrics: []workload.Metric{
			{Name: "offered_mbps", Unit: "Mbit/s", Better: result.Higher, Doc: "payload bits the client sent per second of its send window"},
			{Name: "received_mbps", Unit: "Mbit/s", Better: result.Higher, Doc: "payload bits the server received per second, over its first-to-last datagram window"},
			{Name: "loss_pct", Unit: "%", Better: result.Lower, Doc: "datagrams sent but not received, of all sent", Combine: workload.WeightedBy("sent")},
			{Name: "sent", Unit: "datagrams", Better: result.Higher, Doc: "datagrams the client sent: what loss_pct is a share of", Combine: workload.Count},
		},
		Roles: []string{workload.Server, workload.Client},
		Run:   map[string]workload.RunFunc{workload.Server: udpStreamServer, workload.Client: udpStreamClient},
		Smoke: map[string]string{"duration": "300ms", "bitrate": "100M"},
		Serves: workload.Serves{
			MorePorts: udpMorePorts, // its UDP socket, published with its control port
		},
	})
}

// A datagram starts with its sequence number (8 bytes, little-endian) and
// the trial's nonce, which the server chose (8 bytes): a datagram without
// it is not this trial's.

// udpStreamIdle is how long the server keeps reading after the client's
// final count while datagrams are still arriving: the count travels on TCP
// and may overtake the last datagrams.
var udpStreamIdle = 200 * time.Millisecond

// udpStreamMaxSeq bounds the sequence numbers the server tracks: 2^32
// datagrams is more than a day at 10 Gbit/s of 1472-byte datagrams.
const udpStreamMaxSeq = 1 << 32

type udpStreamDone struct {
	Sent  uint64 `json:"sent"`
	Bytes uint64 `json:"bytes"`
}

type udpStreamReport struct {
	Received  uint64 `json:"received"`
	Bytes     uint64 `json:"bytes"`
	Window    int64  `json:"window_ns"` // first to last datagram
	MaxSeq    uint64 `json:"max_seq"`
	Duplicate uint64 `json:"duplicate"`
	Reordered uint64 `json:"reordered"` // arrived after a higher sequence number
	Corrupt   uint64 `json:"corrupt"`   // wrong size, nonce, or sequence number out of range
}

// parseBitrate reads "0", "500K", "1.5G" (powers of 1000) as bits per second.
func parseBitrate(s string) (float64, error) {
	mult := 1.0
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1e3
	case "M":
		mult = 1e6
	case "G":
		mult = 1e9
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("bitrate %q: want a number with K, M or G", s)
	}
	return f * mult, nil
}

// udpStreamRecv is the server's receive loop and its tallies.
type udpStreamRecv struct {
	size    int
	nonce   uint64
	rep     udpStreamReport
	seen    []uint64 // bitset of sequence numbers received
	first   time.Time
	last    time.Time
	count   atomic.Uint64 // datagrams read, of any kind (for the drain)
	lastAny atomic.Int64  // unix ns of the latest datagram
}

func (u *udpStreamRecv) run(uc *net.UDPConn) error {
	buf := make([]byte, 65536)
	for {
		n, err := uc.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || isTimeout(err) {
				return nil
			}
			return fmt.Errorf("receiving datagrams: %w", err)
		}
		now := time.Now()
		u.count.Add(1)
		u.lastAny.Store(now.UnixNano())
		if n != u.size || binary.LittleEndian.Uint64(buf[8:16]) != u.nonce {
			u.rep.Corrupt++
			continue
		}
		seq := binary.LittleEndian.Uint64(buf[:8])
		if seq >= udpStreamMaxSeq {
			u.rep.Corrupt++
			continue
		}
		w := int(seq / 64)
		if w >= len(u.seen) {
			u.seen = append(u.seen, make([]uint64, max(w+1-len(u.seen), len(u.seen)))...)
		}
		if u.seen[w]&(1<<(seq%64)) != 0 {
			u.rep.Duplicate++
			continue
		}
		u.seen[w] |= 1 << (seq % 64)
		if u.rep.Received == 0 {
			u.first = now
		}
		if seq < u.rep.MaxSeq {
			u.rep.Reordered++
		}
		u.rep.MaxSeq = max(u.rep.MaxSeq, seq)
		u.rep.Received++
		u.rep.Bytes += uint64(n)
		u.last = now
	}
}

func udpStreamServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	ctl, uc, closeAll, err := acceptUDPClient(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer closeAll()

	var nb [8]byte
	_, _ = rand.Read(nb[:])
	rx := &udpStreamRecv{size: int(p.Int("message_size")), nonce: binary.LittleEndian.Uint64(nb[:])}
	var rxErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); rxErr = rx.run(uc) }()
	if err := ctl.send(udpHello{Port: uc.LocalAddr().(*net.UDPAddr).Port, Nonce: rx.nonce}); err != nil {
		return nil, "", err
	}

	var done udpStreamDone
	recvErr := ctl.recv(&done, 0)
	if recvErr == nil {
		// Drain: until every datagram sent is accounted for, or none has
		// come for udpStreamIdle.
		since := time.Now()
		for rx.count.Load() < done.Sent {
			last := time.Unix(0, rx.lastAny.Load())
			if last.Before(since) {
				last = since
			}
			if time.Since(last) > udpStreamIdle || ctx.Err() != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	_ = uc.SetReadDeadline(time.Now())
	wg.Wait()
	if recvErr != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("the client ended without its final count: %w", recvErr)
	}
	if rxErr != nil {
		return nil, "", rxErr
	}
	rep := rx.rep
	rep.Window = int64(rx.last.Sub(rx.first))
	if err := ctl.send(rep); err != nil {
		return nil, "", err
	}
	return nil, "", nil
}

// udpStreamClient sends datagrams to the server at the offered bitrate
// for the run's duration, then compares its count with the server's and
// reports the rates offered and received and the loss.
func udpStreamClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	size := int(p.Int("message_size"))
	rate, err := parseBitrate(p.String("bitrate"))
	if err != nil {
		return nil, "", err
	}
	ctl, uc, hello, closeAll, err := dialUDPServer(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer closeAll()

	tx := newUDPStreamSend(uc, size, hello.Nonce, rate)
	if err := tx.run(ctx, p.Duration("duration")); err != nil {
		return nil, "", err
	}
	var rep udpStreamReport
	if err := ctl.tradeCounts(udpStreamDone{Sent: tx.sent, Bytes: tx.bytes}, &rep); err != nil {
		return nil, "", err
	}
	logf(env, "udp_stream: sent %d datagrams (%d refused locally), server received %d (%d reordered) over %s",
		tx.sent, tx.dropped, rep.Received, rep.Reordered, time.Duration(rep.Window))
	if err := checkUDPStreamCounts(tx.sent, rep, size); err != nil {
		return nil, "", err
	}
	return tx.observations(rep), "", nil
}

// udpStreamSend is the client's paced send loop and its tallies.
type udpStreamSend struct {
	uc       *net.UDPConn
	msg      []byte        // the datagram, its sequence number rewritten for each
	interval float64       // ns per datagram; 0 is unlimited
	sent     uint64        // datagrams that left, numbered 0 to sent-1
	bytes    uint64        // their payload bytes
	dropped  uint64        // sends the local queue refused (not counted as sent)
	window   time.Duration // from the first send to the end of the loop
}

// newUDPStreamSend prepares datagrams of size bytes carrying the trial's
// nonce, paced to rate bits per second (0: as fast as possible).
func newUDPStreamSend(uc *net.UDPConn, size int, nonce uint64, rate float64) *udpStreamSend {
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i)
	}
	binary.LittleEndian.PutUint64(msg[8:16], nonce)
	tx := &udpStreamSend{uc: uc, msg: msg}
	if rate > 0 {
		tx.interval = float64(size) * 8 / rate * 1e9
	}
	return tx
}

// run sends datagrams for d. Pacing: datagram i is due at start +
// i×interval. The client sleeps when it is ahead and sends back to back
// when it is behind, so the average rate holds even though sleeps
// overshoot.
func (tx *udpStreamSend) run(ctx context.Context, d time.Duration) error {
	start := time.Now()
	deadline := start.Add(d)
	for {
		now := time.Now()
		if !now.Before(deadline) {
			break
		}
		if tx.interval > 0 {
			due := start.Add(time.Duration(float64(tx.sent) * tx.interval))
			if wait := due.Sub(now); wait > 0 {
				time.Sleep(min(wait, deadline.Sub(now)))
				continue
			}
		}
		if err := tx.sendOne(ctx); err != nil {
			return err
		}
	}
	tx.window = time.Since(start)
	return nil
}

// sendOne sends the next datagram. The local queue being full is not an
// error: the datagram never left, so it is not sent and its sequence
// number is reused.
func (tx *udpStreamSend) sendOne(ctx context.Context) error {
	binary.LittleEndian.PutUint64(tx.msg[:8], tx.sent)
	if _, err := tx.uc.Write(tx.msg); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) {
			tx.dropped++
			return nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("the server's UDP port %s refused datagram %d", tx.uc.RemoteAddr(), tx.sent)
		}
		return fmt.Errorf("sending datagram %d: %w", tx.sent, err)
	}
	tx.sent++
	tx.bytes += uint64(len(tx.msg))
	return nil
}

// checkUDPStreamCounts checks the server's report against what the client
// sent: no datagram foreign, twice, unsent or of another size, and at
// least two received, for a receive rate.
func checkUDPStreamCounts(sent uint64, rep udpStreamReport, size int) error {
	switch {
	case rep.Corrupt > 0:
		return fmt.Errorf("validation: the server received %d datagrams of the wrong size or without this trial's tag", rep.Corrupt)
	case rep.Duplicate > 0:
		return fmt.Errorf("validation: the server received %d sequence numbers twice", rep.Duplicate)
	case rep.Received > sent:
		return fmt.Errorf("validation: the server received %d datagrams, the client sent %d", rep.Received, sent)
	case rep.Received > 0 && rep.MaxSeq >= sent:
		return fmt.Errorf("validation: the server received sequence number %d, the client sent only %d datagrams", rep.MaxSeq, sent)
	case rep.Bytes != rep.Received*uint64(size):
		return fmt.Errorf("validation: the server received %d bytes in %d datagrams of %d bytes", rep.Bytes, rep.Received, size)
	case rep.Received < 2 || rep.Window <= 0:
		return fmt.Errorf("validation: the server received %d of %d datagrams: no receive rate to compute", rep.Received, sent)
	}
	return nil
}

// observations are the run's metrics: the rate offered over the send
// window, the rate received over the server's, the loss and the count.
func (tx *udpStreamSend) observations(rep udpStreamReport) []result.Observation {
	size := uint64(len(tx.msg))
	mbps := func(bytes uint64, d time.Duration) float64 { return float64(bytes) * 8 / d.Seconds() / 1e6 }
	return []result.Observation{
		{Metric: "offered_mbps", Value: mbps(tx.bytes, tx.window), Unit: "Mbit/s", Better: result.Higher},
		// The window opens with the first datagram's arrival, so that
		// datagram is not part of the rate.
		{Metric: "received_mbps", Value: mbps(rep.Bytes-size, time.Duration(rep.Window)), Unit: "Mbit/s", Better: result.Higher},
		{Metric: "loss_pct", Value: 100 * float64(tx.sent-rep.Received) / float64(tx.sent), Unit: "%", Better: result.Lower},
		{Metric: "sent", Value: float64(tx.sent), Unit: "datagrams", Better: result.Higher},
	}
}
