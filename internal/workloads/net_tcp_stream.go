package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func init() {
	workload.Register(&workload.Spec{
		Type:    "net.tcp_stream",
		Summary: "bulk TCP from client to server (netperf TCP_STREAM); throughput measured at the receiver",
		Params:  tcpStreamParams,
		Metrics: []workload.Metric{
			{Name: "throughput", Unit: "Gbit/s", Better: result.Higher, Doc: "bytes received by the server over its receive window (first to last byte)"},
			{Name: "sender_throughput", Unit: "Gbit/s", Better: result.Higher, Doc: "bytes sent over the client's send window"},
		},
		Roles: []string{workload.Server, workload.Client},
		Run:   map[string]workload.RunFunc{workload.Server: tcpStreamServer, workload.Client: tcpStreamClient},
		Smoke: map[string]string{"duration": "300ms", "message_size": "64KiB"},
		Serves: workload.Serves{
			OneTCPPort: true, // its servers listen on the port they are given, and nothing else
		},
	})
}

var tcpStreamParams = []workload.Param{
	workload.P("duration", workload.Duration, "5s", "how long the client sends").Range(0.05, 86400),
	workload.P("message_size", workload.Size, "128KiB", "bytes per write() call").Range(1, 64<<20),
}

// The server answers the client with the bytes it received and the time from
// first to last byte, so the client can check nothing was lost and report
// the receiver's rate, as netperf does.
type streamReport struct {
	Bytes   uint64
	Elapsed uint64 // nanoseconds
}

func listen(ctx context.Context, env workload.Env) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", env.ListenAddr())
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", env.ListenAddr(), err)
	}
	return ln, nil
}

// acceptOne accepts a single connection or gives up when ctx ends.
func acceptOne(ctx context.Context, ln net.Listener) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	c, err := ln.Accept()
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return c, err
}

func tcpStreamServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	ln, err := listen(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer ln.Close()
	env.Ready(ln.Addr().String())
	conn, err := acceptOne(ctx, ln)
	if err != nil {
		return nil, "", fmt.Errorf("accepting the client: %w", err)
	}
	defer conn.Close()
	// Blocking reads on a descriptor of its own, as iperf3 and netperf do:
	// through Go's netpoller every read that finds the socket empty parks,
	// wakes and reads again (see blockingSock).
	bs, err := newBlockingSock(conn.(*net.TCPConn))
	if err != nil {
		return nil, "", err
	}
	defer bs.Close()
	stop := context.AfterFunc(ctx, bs.Shutdown)
	defer stop()
	buf := make([]byte, 1<<20)
	var total uint64
	var first, last time.Time
	for {
		n, err := bs.Read(buf)
		if n > 0 {
			if total == 0 {
				first = time.Now()
			}
			total += uint64(n)
			last = time.Now()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return nil, "", fmt.Errorf("receiving: %w", err)
		}
	}
	rep := streamReport{Bytes: total, Elapsed: uint64(last.Sub(first))}
	if err := binary.Write(bs, binary.BigEndian, rep); err != nil {
		return nil, "", fmt.Errorf("sending the receive report: %w", err)
	}
	return nil, "", nil
}

// streamSend writes msg again and again for dur, then half-closes: the
// bytes sent, when the first write began and how long the writes took.
func streamSend(ctx context.Context, bs *blockingSock, msg []byte, dur time.Duration) (sent uint64, start time.Time, took time.Duration, err error) {
	start = time.Now()
	deadline := start.Add(dur)
	for time.Now().Before(deadline) {
		n, err := bs.Write(msg)
		sent += uint64(n)
		if err != nil {
			if ctx.Err() != nil {
				return sent, start, 0, ctx.Err()
			}
			return sent, start, 0, fmt.Errorf("sending: %w", err)
		}
	}
	took = time.Since(start)
	if err := bs.CloseWrite(); err != nil {
		return sent, start, took, fmt.Errorf("closing the send side: %w", err)
	}
	return sent, start, took, nil
}

func tcpStreamClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	dur := p.Duration("duration")
	msg := make([]byte, p.Int("message_size"))
	for i := range msg {
		msg[i] = byte(i)
	}
	bs, done, err := dialBlocking(ctx, env.Target)
	if err != nil {
		return nil, "", err
	}
	defer done()

	sent, _, sendElapsed, err := streamSend(ctx, bs, msg, dur)
	if err != nil {
		return nil, "", err
	}
	var rep streamReport
	if err := bs.SetRecvTimeout(30 * time.Second); err != nil {
		return nil, "", fmt.Errorf("setting SO_RCVTIMEO: %w", err)
	}
	if err := binary.Read(bs, binary.BigEndian, &rep); err != nil {
		return nil, "", fmt.Errorf("reading the server's receive report: %w", err)
	}
	if rep.Bytes != sent {
		return nil, "", fmt.Errorf("validation: server received %d bytes, client sent %d", rep.Bytes, sent)
	}
	if rep.Elapsed == 0 {
		return nil, "", fmt.Errorf("validation: server saw all %d bytes at one instant; raise duration", rep.Bytes)
	}
	gbps := func(bytes uint64, d time.Duration) float64 { return float64(bytes) * 8 / d.Seconds() / 1e9 }
	return []result.Observation{
		{Metric: "throughput", Value: gbps(rep.Bytes, time.Duration(rep.Elapsed)), Unit: "Gbit/s", Better: result.Higher},
		{Metric: "sender_throughput", Value: gbps(sent, sendElapsed), Unit: "Gbit/s", Better: result.Higher},
	}, "", nil
}
