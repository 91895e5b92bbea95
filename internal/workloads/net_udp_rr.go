package workloads

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func init() {
	workload.Register(&workload.Spec{
		Type:    "net.udp_rr",
		Summary: "request/response over UDP (netperf UDP_RR); transaction rate, round-trip latency and loss",
		Params: []workload.Param{
			workload.P("duration", workload.Duration, "5s", "how long the client starts new transactions").Range(0.05, 86400),
			workload.P("request_size", workload.Size, "1B", "bytes per request datagram").Range(1, 65507),
			workload.P("response_size", workload.Size, "1B", "bytes per response datagram").Range(1, 65507),
			workload.P("timeout", workload.Duration, "100ms", "how long the client waits for a response before it counts the transaction lost and starts the next").Range(0.001, 60),
		},
		Metrics: append([]workload.Metric{
			{Name: "transactions_per_sec", Unit: "transactions/s", Better: result.Higher, Doc: "transactions answered in time per second of the test"},
			{Name: "loss_pct", Unit: "%", Better: result.Lower, Doc: "transactions whose response did not arrive within timeout, of all started", Combine: workload.WeightedBy("sent")},
			{Name: "sent", Unit: "requests", Better: result.Higher, Doc: "requests sent, one per transaction started: what loss_pct is a share of", Combine: workload.Count},
		}, rttMetrics("round trip of one answered transaction: from the request's send to its response's receipt")...),
		Histograms: []workload.Histogram{rttHistogram},
		Roles:      []string{workload.Server, workload.Client},
		Run:        map[string]workload.RunFunc{workload.Server: udpRRServer, workload.Client: udpRRClient},
		Smoke:      map[string]string{"duration": "300ms"},
		Serves: workload.Serves{
			MorePorts: udpMorePorts, // its UDP socket, published with its control port
		},
	})
}

// udpHello is the server's first control message: where to send datagrams.
type udpHello struct {
	Port  int    `json:"port"`
	Nonce uint64 `json:"nonce,omitempty"` // udp_stream: carried by every datagram
}

// udpRRDone is the client's last control message; udpRRReport the answer.
type udpRRDone struct {
	Sent uint64 `json:"sent"`
}

type udpRRReport struct {
	Received uint64 `json:"received"` // requests of request_size bytes
	Answered uint64 `json:"answered"`
	BadSize  uint64 `json:"bad_size"` // datagrams of another size, not answered
}

func udpRRServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	ctl, uc, closeAll, err := acceptUDPClient(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer closeAll()
	if err := ctl.send(udpHello{Port: uc.LocalAddr().(*net.UDPAddr).Port}); err != nil {
		return nil, "", err
	}

	reqSize, respSize := int(p.Int("request_size")), int(p.Int("response_size"))
	var rep udpRRReport
	var serveErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65536)
		resp := make([]byte, respSize)
		for i := range resp {
			resp[i] = byte(i)
		}
		for {
			n, from, err := uc.ReadFromUDPAddrPort(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					serveErr = fmt.Errorf("receiving requests: %w", err)
				}
				return
			}
			if n != reqSize {
				rep.BadSize++
				continue
			}
			rep.Received++
			copy(resp, buf[:min(8, reqSize, respSize)])
			if _, err := uc.WriteToUDPAddrPort(resp, from); err != nil {
				if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) {
					continue // dropped on the way out: the client counts it lost
				}
				serveErr = fmt.Errorf("sending a response: %w", err)
				return
			}
			rep.Answered++
		}
	}()
	var done udpRRDone
	recvErr := ctl.recv(&done, 0)
	uc.Close()
	wg.Wait()
	if recvErr != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("the client ended without its final count: %w", recvErr)
	}
	if serveErr != nil {
		return nil, "", serveErr
	}
	if err := ctl.send(rep); err != nil {
		return nil, "", err
	}
	return nil, "", nil
}

// udpRRClient runs request/response transactions with the server for the
// run's duration, one at a time, then compares its counts with the
// server's and reports the transaction rate, the loss and the round
// trips.
func udpRRClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	ctl, uc, _, closeAll, err := dialUDPServer(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer closeAll()

	reqSize, respSize := int(p.Int("request_size")), int(p.Int("response_size"))
	timeout := p.Duration("timeout")
	rr := newUDPRRTransactions(uc, reqSize, respSize, timeout)
	start := time.Now()
	deadline := start.Add(p.Duration("duration"))
	for time.Now().Before(deadline) {
		if err := rr.transact(ctx); err != nil {
			return nil, "", err
		}
	}
	elapsed := time.Since(start)

	var rep udpRRReport
	if err := ctl.tradeCounts(udpRRDone{Sent: rr.sent}, &rep); err != nil {
		return nil, "", err
	}
	logf(env, "udp_rr: sent %d, answered in time %d, lost %d (of which %d answered late); server received %d, answered %d",
		rr.sent, rr.answered, rr.lost, rr.late, rep.Received, rep.Answered)
	if err := checkUDPCounts(rr.sent, rr.answered, rr.late, rep, reqSize, timeout); err != nil {
		return nil, "", err
	}
	if err := rr.hist.keep(env); err != nil {
		return nil, "", err
	}
	obs := []result.Observation{
		{Metric: "transactions_per_sec", Value: float64(rr.answered) / elapsed.Seconds(), Unit: "transactions/s", Better: result.Higher},
		{Metric: "loss_pct", Value: 100 * float64(rr.lost) / float64(rr.sent), Unit: "%", Better: result.Lower},
		{Metric: "sent", Value: float64(rr.sent), Unit: "requests", Better: result.Higher},
	}
	return append(obs, rr.hist.Observations(rttMetrics(""))...), "", nil
}

// udpRRTransactions is the client's side of the transactions: the
// request it sends, the buffer it reads responses into, the round trips
// and its tallies.
type udpRRTransactions struct {
	uc       *net.UDPConn
	req      []byte
	buf      []byte // one byte more than a response: a longer datagram shows as n > respSize
	respSize int
	// w is how many of the request's first bytes the server echoes: the
	// sequence number as far as both messages carry it.
	w       int
	timeout time.Duration
	hist    *durations
	sent    uint64 // requests sent, numbered 0 to sent-1
	// answered in time, lost (no answer in time), and late (an answer
	// to a request already counted lost)
	answered, lost, late uint64
}

// newUDPRRTransactions prepares requests of reqSize bytes and a buffer
// for responses of respSize, each transaction waiting timeout for its
// answer.
func newUDPRRTransactions(uc *net.UDPConn, reqSize, respSize int, timeout time.Duration) *udpRRTransactions {
	req := make([]byte, reqSize)
	for i := range req {
		req[i] = byte(i)
	}
	return &udpRRTransactions{
		uc: uc, req: req, buf: make([]byte, respSize+1), respSize: respSize,
		w: min(8, reqSize, respSize), timeout: timeout, hist: newDurations(rttHistogram, rttMax),
	}
}

// transact sends the next request and waits for its answer, counting it
// answered or lost.
func (rr *udpRRTransactions) transact(ctx context.Context) error {
	seq := rr.sent
	putSeq(rr.req, seq)
	// The read deadline is set before the clock starts: not part of
	// the round trip.
	_ = rr.uc.SetReadDeadline(time.Now().Add(rr.timeout))
	t0 := time.Now()
	if _, err := rr.uc.Write(rr.req); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("the server's UDP port %s refused request %d", rr.uc.RemoteAddr(), seq)
		}
		return fmt.Errorf("sending request %d: %w", seq, err)
	}
	rr.sent++
	return rr.await(ctx, seq, t0)
}

// await reads responses until the one to request seq (sent at t0)
// arrives, recording its round trip, or until the read deadline, when
// the request is lost. Answers to earlier requests, already counted
// lost, are counted late and skipped.
func (rr *udpRRTransactions) await(ctx context.Context, seq uint64, t0 time.Time) error {
	for {
		n, err := rr.uc.Read(rr.buf)
		t1 := time.Now()
		if err != nil {
			if isTimeout(err) {
				rr.lost++
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("the server's UDP port %s refused request %d", rr.uc.RemoteAddr(), seq)
			}
			return fmt.Errorf("receiving response %d: %w", seq, err)
		}
		if n != rr.respSize {
			return fmt.Errorf("validation: a response of %d bytes, want %d", n, rr.respSize)
		}
		got := getSeq(rr.buf[:rr.w])
		if got == seqLow(seq, rr.w) {
			rr.hist.Record(t1.Sub(t0))
			rr.answered++
			return nil
		}
		if rr.w >= 8 && got > seq {
			return fmt.Errorf("validation: response carries sequence number %d, but only %d requests were sent", got, seq+1)
		}
		rr.late++
	}
}

// checkUDPCounts checks the client's counts against the server's: nothing
// received that was not sent, answered that was not received, or taken
// for an answer that the server did not send; at least one answer in time.
func checkUDPCounts(sent, answered, late uint64, rep udpRRReport, reqSize int, timeout time.Duration) error {
	switch {
	case rep.BadSize > 0:
		return fmt.Errorf("validation: the server received %d datagrams that were not %d-byte requests", rep.BadSize, reqSize)
	case rep.Received > sent:
		return fmt.Errorf("validation: the server received %d requests, the client sent %d", rep.Received, sent)
	case rep.Answered > rep.Received:
		return fmt.Errorf("validation: the server answered %d requests but received %d", rep.Answered, rep.Received)
	case answered+late > rep.Answered:
		return fmt.Errorf("validation: the client received %d responses, the server sent %d", answered+late, rep.Answered)
	case answered == 0:
		return fmt.Errorf("validation: none of %d requests was answered within %s", sent, timeout)
	}
	return nil
}
