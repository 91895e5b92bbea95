package workloads

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func init() {
	workload.Register(&workload.Spec{
		Type:       "net.tcp_rr",
		Summary:    "request/response over one TCP connection (netperf TCP_RR, with burst mode); transaction rate and round-trip latency",
		Params:     tcpRRParams,
		Metrics:    tcpRRMetrics,
		Histograms: []workload.Histogram{rttHistogram},
		Roles:      []string{workload.Server, workload.Client},
		Run:        map[string]workload.RunFunc{workload.Server: tcpRRServer, workload.Client: tcpRRClient},
		Smoke:      map[string]string{"duration": "300ms"},
		Serves: workload.Serves{
			OneTCPPort: true, // its servers listen on the port they are given, and nothing else
		},
	})
}

// tcpRRParams are net.tcp_rr's parameters; a service's echo client takes
// some of them (clientParams).
var tcpRRParams = []workload.Param{
	workload.P("duration", workload.Duration, "5s", "how long the client starts new transactions").Range(0.05, 86400),
	workload.P("request_size", workload.Size, "1B", "bytes per request").Range(1, 16<<20),
	workload.P("response_size", workload.Size, "1B", "bytes per response").Range(1, 16<<20),
	workload.P("burst", workload.Int, "1", "transactions in flight: the client keeps this many requests outstanding, pipelined (netperf's burst mode); 1 is plain ping-pong").Range(1, 1024),
	workload.P("socket_buffer", workload.Size, "0", "SO_SNDBUF and SO_RCVBUF on both sides (S1 used 256KiB); 0 keeps the kernel's autotuning. The kernel caps it at net.core.wmem_max/rmem_max").Range(0, 1<<30),
	workload.P("nodelay", workload.Bool, "true", "TCP_NODELAY on both sides (netperf's -D); false lets Nagle's algorithm coalesce"),
}

var tcpRRMetrics = append([]workload.Metric{
	{Name: "transactions_per_sec", Unit: "transactions/s", Better: result.Higher, Doc: "completed transactions per second, first request to last response"},
}, rttMetrics("round trip of one transaction: from the request's write to its whole response read")...)

// rrGrace is how long the client waits past the test time for responses
// still outstanding and the server's count before calling them lost; a
// variable so the tests of lost responses run fast.
var rrGrace = 10 * time.Second

// rrBufSize is the read buffer: large enough that pipelined messages arrive
// in few read calls.
func rrBufSize(msg int64) int { return int(max(msg, 64<<10)) }

// tcpRRServer answers every request with a response carrying the request's
// sequence number, until the client half-closes; then it sends the number
// of transactions it answered (8 bytes, big-endian) and ends.
func tcpRRServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	lc := net.ListenConfig{Control: sockBufControl(int(p.Int("socket_buffer")))}
	ln, err := lc.Listen(ctx, "tcp", env.ListenAddr())
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", env.ListenAddr(), err)
	}
	defer ln.Close()
	env.Ready(ln.Addr().String())
	conn, err := acceptOne(ctx, ln)
	if err != nil {
		return nil, "", fmt.Errorf("accepting the client: %w", err)
	}
	ln.Close()
	defer conn.Close()
	tc := conn.(*net.TCPConn)
	if err := tc.SetNoDelay(p.Bool("nodelay")); err != nil {
		return nil, "", fmt.Errorf("setting TCP_NODELAY: %w", err)
	}
	if sb := p.Int("socket_buffer"); sb > 0 {
		snd, rcv := sockBufs(tc)
		logf(env, "socket_buffer %d: server SO_SNDBUF %d, SO_RCVBUF %d (the kernel doubles, and caps at [wr]mem_max)", sb, snd, rcv)
	}
	bs, err := newBlockingSock(tc)
	if err != nil {
		return nil, "", err
	}
	defer bs.Close()
	stop := context.AfterFunc(ctx, bs.Shutdown)
	defer stop()

	r := bufio.NewReaderSize(bs, rrBufSize(p.Int("request_size")))
	req := make([]byte, p.Int("request_size"))
	resp := make([]byte, p.Int("response_size"))
	for i := range resp {
		resp[i] = byte(i)
	}
	var n uint64
	var y yielder
	for {
		y.tick(time.Now())
		if _, err := io.ReadFull(r, req); err != nil {
			if errors.Is(err, io.EOF) { // the client half-closed between requests: done
				break
			}
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return nil, "", fmt.Errorf("reading request %d: %w", n, err)
		}
		if !seqMatches(req, n) {
			return nil, "", fmt.Errorf("validation: request %d carries sequence number %d", n, getSeq(req))
		}
		putSeq(resp, n)
		if _, err := bs.Write(resp); err != nil {
			return nil, "", fmt.Errorf("sending response %d: %w", n, err)
		}
		n++
	}
	if err := binary.Write(bs, binary.BigEndian, n); err != nil {
		return nil, "", fmt.Errorf("sending the count of transactions: %w", err)
	}
	return nil, "", nil
}

func tcpRRClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	return tcpRRAgainst(ctx, p, env, env.Target, readRRCount)
}

// readRRCount is the end of a run against net.tcp_rr's own server: its
// count of the transactions it answered, then nothing.
func readRRCount(r *bufio.Reader, _ *blockingSock, done uint64) error {
	var answered uint64
	if err := binary.Read(r, binary.BigEndian, &answered); err != nil {
		return fmt.Errorf("validation: reading the server's count of transactions: %w", err)
	}
	if extra, _ := r.Read(make([]byte, 1)); extra > 0 {
		return fmt.Errorf("validation: the server sent more than %d responses and its count", done)
	}
	if answered != done {
		return fmt.Errorf("validation: server answered %d transactions, client completed %d", answered, done)
	}
	return nil
}

// tcpRRAgainst runs the transactions against the server at target and,
// once the client has half-closed, checks the server's end with ended
// (given the reader past the last response and the transactions done).
func tcpRRAgainst(ctx context.Context, p workload.Values, env workload.Env, target string, ended func(r *bufio.Reader, bs *blockingSock, done uint64) error) ([]result.Observation, string, error) {
	dur := p.Duration("duration")
	burst := max(1, int(p.Int("burst")))
	d := net.Dialer{Control: sockBufControl(int(p.Int("socket_buffer")))}
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, "", fmt.Errorf("connecting to %s: %w", target, err)
	}
	defer conn.Close()
	tc := conn.(*net.TCPConn)
	if err := tc.SetNoDelay(p.Bool("nodelay")); err != nil {
		return nil, "", fmt.Errorf("setting TCP_NODELAY: %w", err)
	}
	if sb := p.Int("socket_buffer"); sb > 0 {
		snd, rcv := sockBufs(tc)
		logf(env, "socket_buffer %d: client SO_SNDBUF %d, SO_RCVBUF %d", sb, snd, rcv)
	}
	bs, err := newBlockingSock(tc)
	if err != nil {
		return nil, "", err
	}
	defer bs.Close()
	stop := context.AfterFunc(ctx, bs.Shutdown)
	defer stop()
	// A response that never comes fails the trial after the grace; the
	// kernel times the read, at no cost per transaction.
	if err := bs.SetRecvTimeout(rrGrace); err != nil {
		return nil, "", fmt.Errorf("setting SO_RCVTIMEO: %w", err)
	}

	rr := &tcpRR{
		sock: bs,
		r:    bufio.NewReaderSize(bs, rrBufSize(p.Int("response_size"))),
		req:  make([]byte, p.Int("request_size")),
		resp: make([]byte, p.Int("response_size")),
		hist: newDurations(rttHistogram, rttMax),
	}
	for i := range rr.req {
		rr.req[i] = byte(i)
	}
	start := time.Now()
	var end time.Time
	if burst == 1 {
		end, err = rr.pingPong(start.Add(dur))
	} else {
		end, err = rr.pipelined(start, start.Add(dur), burst)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", err
	}

	if err := bs.CloseWrite(); err != nil {
		return nil, "", fmt.Errorf("closing the send side: %w", err)
	}
	if err := ended(rr.r, bs, rr.done); err != nil {
		return nil, "", err
	}
	if rr.done == 0 || !end.After(start) {
		return nil, "", fmt.Errorf("validation: no transaction completed in %s", dur)
	}
	if err := rr.hist.keep(env); err != nil {
		return nil, "", err
	}
	obs := []result.Observation{{
		Metric: "transactions_per_sec", Value: float64(rr.done) / end.Sub(start).Seconds(),
		Unit: "transactions/s", Better: result.Higher,
	}}
	return append(obs, rr.hist.Observations(rttMetrics(""))...), "", nil
}

// tcpRR is the client side of one connection.
type tcpRR struct {
	sock      *blockingSock
	r         *bufio.Reader
	req, resp []byte
	hist      *durations
	done      uint64 // transactions whose response was read and checked
}

// readResponse reads response number done and checks its sequence number.
func (t *tcpRR) readResponse(sent uint64) error {
	if _, err := io.ReadFull(t.r, t.resp); err != nil {
		if isTimeout(err) {
			return fmt.Errorf("validation: no response to request %d of %d sent within %s", t.done, sent, rrGrace)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("validation: the server closed the connection after %d of %d responses", t.done, sent)
		}
		return fmt.Errorf("reading response %d: %w", t.done, err)
	}
	if !seqMatches(t.resp, t.done) {
		return fmt.Errorf("validation: response %d carries sequence number %d (want %d): lost, repeated or reordered",
			t.done, getSeq(t.resp), seqLow(t.done, len(t.resp)))
	}
	t.done++
	return nil
}

// pingPong is burst 1, netperf's TCP_RR: one goroutine writes a request
// and reads its response, nothing in between.
func (t *tcpRR) pingPong(deadline time.Time) (end time.Time, err error) {
	var y yielder
	for {
		t0 := time.Now()
		if !t0.Before(deadline) {
			return end, nil
		}
		y.tick(t0)
		putSeq(t.req, t.done)
		if _, err := t.sock.Write(t.req); err != nil {
			return end, fmt.Errorf("sending request %d: %w", t.done, err)
		}
		if err := t.readResponse(t.done + 1); err != nil {
			return end, err
		}
		end = time.Now()
		t.hist.Record(end.Sub(t0))
	}
}

// pipelined keeps burst requests in flight. A writer goroutine sends a
// request whenever the reader hands it a token, which the reader does after
// each response while the test time lasts: so requests never wait for
// responses to be read (no deadlock when both directions' buffers fill) and
// at most burst are outstanding.
func (t *tcpRR) pipelined(start, deadline time.Time, burst int) (end time.Time, err error) {
	sendAt := make([]atomic.Int64, burst) // ns since start, by sequence number mod burst
	tokens := make(chan struct{}, burst)
	for range burst {
		tokens <- struct{}{}
	}
	quit := make(chan struct{})
	var sent atomic.Uint64
	werr := make(chan error, 1)
	go func() {
		for seq := uint64(0); ; seq++ {
			select {
			case <-tokens:
			case <-quit:
				werr <- nil
				return
			}
			putSeq(t.req, seq)
			sendAt[seq%uint64(burst)].Store(int64(time.Since(start)))
			if _, err := t.sock.Write(t.req); err != nil {
				werr <- fmt.Errorf("sending request %d: %w", seq, err)
				t.sock.Shutdown() // unblocks the reader
				return
			}
			sent.Add(1)
		}
	}()
	total := uint64(burst) // requests that will be sent: the first burst plus one per token handed back
	for t.done < total {
		seq := t.done
		if err = t.readResponse(sent.Load()); err != nil {
			break
		}
		now := time.Since(start)
		t.hist.Record(now - time.Duration(sendAt[seq%uint64(burst)].Load()))
		end = start.Add(now)
		if end.Before(deadline) {
			total++
			tokens <- struct{}{}
		}
	}
	close(quit)
	if wErr := <-werr; wErr != nil {
		return end, wErr
	}
	return end, err
}
