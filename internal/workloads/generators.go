package workloads

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// ctrbench's generators against a user's server (a service's clients,
// package userkinds), which speaks no protocol of ours: HTTP GETs of a
// path, every response the first one's; net.tcp_rr against an echo server (every request comes
// back as it went), net.tcp_stream against a sink (it reads and discards).
// What our own servers would report is read from the connection instead:
// the echoes themselves, and the client kernel's count of bytes the
// server's TCP acknowledged (TCP_INFO).

// Client types of a service that are ctrbench's own generators.
const (
	GenHTTP      = "http.get"
	GenTCPRR     = "net.tcp_rr"     // against an echo server
	GenTCPStream = "net.tcp_stream" // against a sink
)

// Generator is one of ctrbench's load generators driving a server
// ctrbench did not write (a service's client, package userkinds): its
// parameters against such a server, what it measures, and its run against
// the server's host:port.
type Generator struct {
	Params     *workload.Spec
	Metrics    []workload.Metric
	Histograms []workload.Histogram
	Run        func(ctx context.Context, p workload.Values, env workload.Env, target string) ([]result.Observation, string, error)
}

// GeneratorOf returns the generator a service's client type names.
func GeneratorOf(typ string) (Generator, bool) {
	switch typ {
	case GenHTTP:
		return Generator{Params: httpClientParams, Metrics: httpMetrics, Histograms: []workload.Histogram{httpLatency}, Run: httpAgainst}, true
	case GenTCPRR:
		return Generator{Params: echoClientParams, Metrics: tcpRRMetrics, Histograms: []workload.Histogram{rttHistogram}, Run: tcpRREcho}, true
	case GenTCPStream:
		return Generator{Params: sinkClientParams, Metrics: sinkMetrics, Run: func(ctx context.Context, p workload.Values, _ workload.Env, target string) ([]result.Observation, string, error) {
			return tcpStreamSink(ctx, p, target)
		}}, true
	}
	return Generator{}, false
}

// httpClientParams are http.get's parameters against a user's server:
// path instead of pong's size.
var httpClientParams = &workload.Spec{Type: "service client " + GenHTTP, Params: []workload.Param{
	workload.P("path", workload.String, "/", "the path every request GETs; every response must be the one the first GET got (status 200, the same body)").Matching(`/[^ ]*`, "a path starting with /"),
	httpParams[1], httpParams[2], httpParams[3], httpParams[4],
}}

// echoClientParams are net.tcp_rr's against an echo server: a response is
// the request, so it has no size of its own.
var echoClientParams = &workload.Spec{Type: "service client " + GenTCPRR, Params: []workload.Param{
	tcpRRParams[0], tcpRRParams[1], tcpRRParams[3], tcpRRParams[4], tcpRRParams[5],
}}

// sinkClientParams are net.tcp_stream's against a sink.
var sinkClientParams = &workload.Spec{Type: "service client " + GenTCPStream, Params: tcpStreamParams}

// sinkMetrics are what a sink run measures.
var sinkMetrics = []workload.Metric{
	{Name: "throughput", Unit: "Gbit/s", Better: result.Higher, Doc: "bytes the server's TCP acknowledged, over the time from the first write to the last acknowledgement (TCP_INFO on the client)"},
	{Name: "sender_throughput", Unit: "Gbit/s", Better: result.Higher, Doc: "bytes sent over the client's send window"},
}

// echoEndGrace is how long an echo server has, after the client
// half-closed, to close too; one that keeps the connection open is not
// at fault, only one that sends more.
const echoEndGrace = 2 * time.Second

// tcpRREcho runs net.tcp_rr's transactions against a user's echo server.
// Each request carries its sequence number, so a response must be that
// request's echo, whole and in order.
func tcpRREcho(ctx context.Context, p workload.Values, env workload.Env, target string) ([]result.Observation, string, error) {
	q := maps.Clone(p)
	q["response_size"] = p.String("request_size")
	return tcpRRAgainst(ctx, q, env, target, func(r *bufio.Reader, bs *blockingSock, done uint64) error {
		if err := bs.SetRecvTimeout(echoEndGrace); err != nil {
			return err
		}
		n, err := r.Read(make([]byte, 1))
		switch {
		case n > 0:
			return fmt.Errorf("validation: the server sent more than the %d echoes", done)
		case err == nil, errors.Is(err, io.EOF), isTimeout(err):
			return nil
		}
		return fmt.Errorf("after the last echo: %w", err)
	})
}

// tcpStreamSink sends to a user's sink for the duration, half-closes,
// and waits until the server's TCP has acknowledged every byte.
func tcpStreamSink(ctx context.Context, p workload.Values, target string) ([]result.Observation, string, error) {
	msg := make([]byte, p.Int("message_size"))
	for i := range msg {
		msg[i] = byte(i)
	}
	bs, done, err := dialBlocking(ctx, target)
	if err != nil {
		return nil, "", err
	}
	defer done()
	sent, start, took, err := streamSend(ctx, bs, msg, p.Duration("duration"))
	if err != nil {
		return nil, "", err
	}
	acked, at, err := awaitAcked(ctx, bs.fd, sent, 30*time.Second)
	if err != nil {
		return nil, "", err
	}
	gbps := func(bytes uint64, d time.Duration) float64 { return float64(bytes) * 8 / d.Seconds() / 1e9 }
	return []result.Observation{
		{Metric: "throughput", Value: gbps(acked, at.Sub(start)), Unit: "Gbit/s", Better: result.Higher},
		{Metric: "sender_throughput", Value: gbps(sent, took), Unit: "Gbit/s", Better: result.Higher},
	}, "", nil
}

// awaitAcked polls the socket's TCP_INFO until nothing is left unsent or
// unacknowledged, and returns the bytes the peer acknowledged and when;
// fewer than sent, or a peer that acknowledges nothing more within
// patience, fails the run.
func awaitAcked(ctx context.Context, fd int, sent uint64, patience time.Duration) (uint64, time.Time, error) {
	deadline := time.Now().Add(patience)
	for {
		ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("reading TCP_INFO: %w", err)
		}
		now := time.Now()
		if ti.Notsent_bytes == 0 && ti.Unacked == 0 {
			// bytes_acked counts the data the peer acknowledged (the FIN
			// is not data): all of it, or the connection lost some.
			if ti.Bytes_acked < sent {
				return ti.Bytes_acked, now, fmt.Errorf("validation: the server acknowledged %d bytes, the client sent %d", ti.Bytes_acked, sent)
			}
			return sent, now, nil
		}
		if now.After(deadline) {
			return ti.Bytes_acked, now, fmt.Errorf("validation: the server acknowledged %d of %d bytes, not the rest within %s of the last write (is it reading?)", ti.Bytes_acked, sent, patience)
		}
		if ctx.Err() != nil {
			return 0, now, ctx.Err()
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// httpAgainst runs ctrbench's HTTP generator against a user's server: the
// first GET of the path sets what every response must be (status 200 and
// that body), then the load engine drives it as it drives pong.
func httpAgainst(ctx context.Context, p workload.Values, env workload.Env, target string) ([]result.Observation, string, error) {
	timeout := p.Duration("request_timeout")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+p.String("path"), nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("the first GET %s: %w", p.String("path"), err)
	}
	want, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("the first GET %s: %w", p.String("path"), err)
	case resp.StatusCode != 200:
		return nil, "", fmt.Errorf("the first GET %s: status %d, want 200", p.String("path"), resp.StatusCode)
	case len(want) == 0:
		return nil, "", fmt.Errorf("the first GET %s: an empty body; give a path with content", p.String("path"))
	}
	dur := p.Duration("duration")
	t, elapsed, err := runLoad(ctx, loadPlan{
		target: target, path: p.String("path"), size: len(want), want: want, conns: int(p.Int("concurrency")), dur: dur,
		rate: p.Float("rate"), timeout: timeout,
		newLat: func() *latencies { return newLatencies(p) },
	})
	if err != nil {
		return nil, "", err
	}
	return httpObservations(env, t, elapsed, dur)
}
