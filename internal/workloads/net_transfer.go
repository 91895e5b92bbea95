package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func init() {
	workload.Register(&workload.Spec{
		Type:    "net.transfer",
		Summary: "fixed-size TCP flows, each on a new connection (S4's 5 MB netcat transfers); flow completion time",
		Params: []workload.Param{
			workload.P("size", workload.Size, "5MB", "bytes per flow").Range(1, 1<<40),
			workload.P("flows", workload.Int, "20", "number of flows, each a new TCP connection (ignored when duration is set)").Range(1, 100000),
			workload.P("duration", workload.Duration, "0s", "0: run exactly flows flows; else keep starting flows until this much time has passed (those in progress finish), so every pair's flows meet the others' load for the whole window (S4's FCT under N pairs)").Range(0, 86400),
			workload.P("concurrency", workload.Int, "1", "flows in progress at once; 1 runs them one after another").Range(1, 256),
		},
		Metrics:    transferMetrics,
		Histograms: []workload.Histogram{fctHistogram},
		Roles:      []string{workload.Server, workload.Client},
		Run:        map[string]workload.RunFunc{workload.Server: transferServer, workload.Client: transferClient},
		Smoke:      map[string]string{"size": "1MB", "flows": "5"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("flows × size bytes at %g Gbit/s, with duration 0", transferRate*8/1e9),
				Time:  transferTime,
			},
		},
	})
}

// transferTime is the dry run's estimate of a trial that runs a count of
// flows (duration 0): their bytes over one link.
func transferTime(p workload.Values, _ int) (time.Duration, bool) {
	if p.Duration("duration") > 0 {
		return 0, false
	}
	return time.Duration(float64(p.Int("flows")*p.Int("size")) / transferRate * float64(time.Second)), true
}

// fctHistogram declares the flow completion times the client records.
var fctHistogram = durationHistogram("fct", "completion time of every flow")

var transferMetrics = []workload.Metric{
	{Name: "fct_mean", Unit: "ms", Better: result.Lower, Doc: "mean flow completion time: from the start of connect() until the client has read the server's acknowledgment that all size bytes arrived", Combine: workload.MeanOf(fctHistogram.Name)},
	{Name: "fct_p50", Unit: "ms", Better: result.Lower, Doc: "median flow completion time (HDR histogram, 3 significant digits)", Combine: workload.PercentileOf(fctHistogram.Name, 50)},
	{Name: "fct_p99", Unit: "ms", Better: result.Lower, Doc: "99th percentile flow completion time (HDR histogram, rank round(0.99·flows): the slowest flow when there are 50 or fewer)", Combine: workload.PercentileOf(fctHistogram.Name, 99)},
	{Name: "throughput", Unit: "Gbit/s", Better: result.Higher, Doc: "bytes of all flows over the time from the first connect() to the last acknowledgment"},
	{Name: "flows", Unit: "flows", Better: result.Higher, Doc: "flows completed (with duration: how many fit in it)", Combine: workload.Count},
}

// transferAckTimeout bounds the wait for a flow's acknowledgment once all
// its bytes are written, and the server's wait for the client to close.
var transferAckTimeout = 30 * time.Second

// transferServer accepts flows connections. On each it reads exactly size
// bytes, then sends the count it read (8 bytes, big-endian) as the
// acknowledgment, then expects the client to close without sending more.
func transferServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	size, flows := p.Int("size"), int(p.Int("flows"))
	timed := p.Duration("duration") > 0
	ln, err := listen(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer ln.Close()
	env.Ready(ln.Addr().String())
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		ended    bool
	)
	// A failed flow ends the run: no more are accepted.
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			ln.Close()
		}
	}
	// Counted, the server knows how many flows come; timed, the client
	// ends them with one connection that carries the end marker instead
	// of a flow's bytes, and the listener is closed then.
	for i := 0; timed || i < flows; i++ {
		conn, err := acceptOne(ctx, ln)
		if err != nil {
			mu.Lock()
			done, failed := ended, firstErr != nil
			mu.Unlock()
			if done || failed {
				break
			}
			wg.Wait()
			if timed {
				return nil, "", fmt.Errorf("accepting flow %d: %w", i+1, err)
			}
			return nil, "", fmt.Errorf("accepting flow %d of %d: %w", i+1, flows, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			stop := closeOnDone(ctx, conn)
			defer stop()
			var got int64
			if timed {
				end, n, err := readTransferEnd(conn)
				if err != nil {
					fail(fmt.Errorf("flow %d: %w", i+1, err))
					return
				}
				if end {
					mu.Lock()
					ended = true
					mu.Unlock()
					ln.Close()
					return
				}
				got = n
			}
			if err := receiveFlow(conn, size, got); err != nil {
				fail(fmt.Errorf("flow %d: %w", i+1, err))
			}
		}()
	}
	ln.Close()
	wg.Wait()
	if firstErr != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", firstErr
	}
	return nil, "", nil
}

// transferEnd is what the client sends, on a connection of its own, to end
// a timed run. No flow begins with it: a flow's payload starts with byte 0.
var transferEnd = []byte("ctrbench-transfer-end")

// readTransferEnd reads a connection's first byte: a flow's (0), counted
// as received, or the end marker's, and then the rest of the marker.
func readTransferEnd(conn net.Conn) (end bool, got int64, err error) {
	first := make([]byte, 1)
	if _, err := io.ReadFull(conn, first); err != nil {
		return false, 0, fmt.Errorf("receiving: %w", err)
	}
	if first[0] != transferEnd[0] {
		return false, 1, nil
	}
	rest := make([]byte, len(transferEnd)-1)
	if _, err := io.ReadFull(conn, rest); err != nil || string(rest) != string(transferEnd[1:]) {
		return false, 0, fmt.Errorf("validation: a connection began with neither a flow's bytes nor the end marker")
	}
	return true, 0, nil
}

// receiveFlow reads the rest of a flow of size bytes, got of which have
// arrived already, and acknowledges what arrived.
func receiveFlow(conn net.Conn, size, got int64) error {
	buf := make([]byte, min(size, 256<<10))
	for got < size {
		n, err := conn.Read(buf[:min(int64(len(buf)), size-got)])
		got += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("receiving: %w", err)
		}
	}
	// Acknowledge what arrived, even if short: the client then fails the
	// trial with both counts.
	if err := binary.Write(conn, binary.BigEndian, uint64(got)); err != nil {
		return fmt.Errorf("acknowledging %d bytes: %w", got, err)
	}
	if got != size {
		return fmt.Errorf("validation: the connection ended after %d of %d bytes", got, size)
	}
	_ = conn.SetReadDeadline(time.Now().Add(transferAckTimeout))
	n, err := conn.Read(make([]byte, 1))
	switch {
	case n > 0:
		return fmt.Errorf("validation: the client sent more than %d bytes", size)
	case err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("waiting for the client to close: %w", err)
	}
	return nil
}

func transferClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	size, flows := p.Int("size"), int(p.Int("flows"))
	dur := p.Duration("duration")
	workers := int(p.Int("concurrency"))
	if dur == 0 {
		workers = min(workers, flows)
	}
	payload := make([]byte, min(size, 256<<10))
	for i := range payload {
		payload[i] = byte(i)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		lastAck  time.Time
		fct      []time.Duration
		started  int
	)
	start := time.Now()
	// next hands out the next flow's number, or false when no more may
	// start: flows of them, or, timed, once dur has passed.
	next := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || (dur == 0 && started == flows) || (dur > 0 && time.Since(start) >= dur) {
			return 0, false
		}
		started++
		return started, true
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ok := next(); ok; i, ok = next() {
				d, err := sendFlow(ctx, env.Target, payload, size)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("flow %d: %w", i, err)
						cancel() // the other flows stop
					}
					mu.Unlock()
					return
				}
				fct = append(fct, d)
				lastAck = time.Now()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, "", firstErr
	}
	if dur > 0 {
		if err := endTransfer(ctx, env.Target); err != nil {
			return nil, "", err
		}
	}
	wall := lastAck.Sub(start)

	fcts := newDurations(fctHistogram, longMax)
	for _, d := range fct {
		fcts.Record(d)
	}
	if err := fcts.keep(env); err != nil {
		return nil, "", err
	}
	return append(fcts.Observations(transferMetrics),
		result.Observation{Metric: "throughput", Value: float64(size) * float64(len(fct)) * 8 / wall.Seconds() / 1e9, Unit: "Gbit/s", Better: result.Higher},
		result.Observation{Metric: "flows", Value: float64(len(fct)), Unit: "flows", Better: result.Higher},
	), "", nil
}

// endTransfer tells the server of a timed run that no more flows come.
func endTransfer(ctx context.Context, target string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return fmt.Errorf("connecting to %s to end the flows: %w", target, err)
	}
	defer conn.Close()
	if _, err := conn.Write(transferEnd); err != nil {
		return fmt.Errorf("ending the flows: %w", err)
	}
	return nil
}

// sendFlow runs one flow and returns its completion time: from the start
// of connect() — the handshake included, as a new short flow pays it — to
// the moment the client has read the server's acknowledgment of all size
// bytes. Closing the connection afterwards is not part of it.
func sendFlow(ctx context.Context, target string, payload []byte, size int64) (time.Duration, error) {
	var d net.Dialer
	t0 := time.Now()
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return 0, fmt.Errorf("connecting to %s: %w", target, err)
	}
	defer conn.Close()
	stop := closeOnDone(ctx, conn)
	defer stop()
	for left := size; left > 0; {
		n, err := conn.Write(payload[:min(int64(len(payload)), left)])
		left -= int64(n)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("sending (%d of %d bytes left): %w", left, size, err)
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(transferAckTimeout))
	var ack uint64
	if err := binary.Read(conn, binary.BigEndian, &ack); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("validation: no acknowledgment from the server after sending %d bytes: %w", size, err)
	}
	fct := time.Since(t0)
	if ack != uint64(size) {
		return 0, fmt.Errorf("validation: the server acknowledged %d bytes, the client sent %d", ack, size)
	}
	return fct, nil
}
