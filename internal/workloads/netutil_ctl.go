package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// The UDP workloads and net.sockperf measure on one socket and talk on
// another: a small TCP control connection to the address the server
// announced. Over it the server says where to send (its UDP port, or the
// port sockperf listens on), and at the end the client says what it sent and
// the server answers with what it received, so both sides' counts are
// compared. A control message is one JSON object per line.

// ctlTimeout bounds every wait for a control message that should come at
// once (a hello, a report); a variable so tests can shorten it.
var ctlTimeout = 15 * time.Second

type ctlConn struct {
	conn net.Conn
	enc  *json.Encoder
	dec  *json.Decoder
}

func newCtlConn(c net.Conn) *ctlConn {
	return &ctlConn{conn: c, enc: json.NewEncoder(c), dec: json.NewDecoder(c)}
}

// dialCtl connects to a server's control address.
func dialCtl(ctx context.Context, target string) (*ctlConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", target, err)
	}
	return newCtlConn(c), nil
}

func (c *ctlConn) send(v any) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(ctlTimeout))
	if err := c.enc.Encode(v); err != nil {
		return fmt.Errorf("control connection: sending: %w", err)
	}
	return nil
}

// recv reads the next message; timeout 0 waits until the connection ends
// (closed by the peer, or by ctx through closeOnDone).
func (c *ctlConn) recv(v any, timeout time.Duration) error {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	_ = c.conn.SetReadDeadline(dl)
	if err := c.dec.Decode(v); err != nil {
		return fmt.Errorf("control connection: receiving: %w", err)
	}
	return nil
}

func (c *ctlConn) Close() error { return c.conn.Close() }

// tradeCounts is a UDP client's end of a run: it sends done, what it
// sent, and reads the server's report of what arrived into rep, so the
// two sides' counts can be compared.
func (c *ctlConn) tradeCounts(done, rep any) error {
	if err := c.send(done); err != nil {
		return err
	}
	if err := c.recv(rep, ctlTimeout); err != nil {
		return fmt.Errorf("reading the server's counts: %w", err)
	}
	return nil
}

// closeOnDone closes c when ctx ends, so no read or write outlives the
// trial; the returned stop undoes it.
func closeOnDone(ctx context.Context, c interface{ Close() error }) (stop func() bool) {
	return context.AfterFunc(ctx, func() { c.Close() })
}

// targetHost is the host part of the client's target: where the data
// sockets (UDP, sockperf) go, beside the control connection.
func targetHost(target string) (string, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return "", fmt.Errorf("target %q: %w", target, err)
	}
	return host, nil
}

// listenUDP opens the server's UDP socket on its bind address: on the
// number of the TCP port it was given, when given one (an engine publishes
// both: udpMorePorts), else on any free port.
func listenUDP(env workload.Env) (*net.UDPConn, error) {
	addr, err := net.ResolveUDPAddr("udp", net.JoinHostPort(env.Bind, strconv.Itoa(env.Port)))
	if err != nil {
		return nil, fmt.Errorf("bind address %q: %w", env.Bind, err)
	}
	c, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for UDP on %s: %w", env.Bind, err)
	}
	return c, nil
}

// sockBufControl sets SO_SNDBUF and SO_RCVBUF to size before a socket
// connects or listens (so the window scale is chosen for them; accepted
// sockets inherit a listener's). 0 leaves the kernel's autotuning alone.
// The kernel doubles the value and caps it at net.core.[rw]mem_max, as it
// does for netperf's -s/-S.
func sockBufControl(size int) func(network, address string, c syscall.RawConn) error {
	if size <= 0 {
		return nil
	}
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, size); serr != nil {
				return
			}
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("setting socket buffers to %d bytes: %w", size, err)
		}
		return nil
	}
}

// sockBufs reads back the effective send and receive buffer sizes.
func sockBufs(c syscall.Conn) (snd, rcv int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = rc.Control(func(fd uintptr) {
		snd, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		rcv, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	})
	return snd, rcv
}

// logf writes a diagnostic when the agent gave a logger (tests may not).
func logf(env workload.Env, format string, a ...any) {
	if env.Log != nil {
		env.Log(format, a...)
	}
}

// Sequence numbers in request/response messages: a message carries the low
// min(len, 8) bytes of its sequence number, little-endian, at its start. A
// 1-byte message thus carries the sequence number modulo 256, enough to catch
// a lost, repeated or reordered message on an in-order stream; 8 bytes or
// more carry it whole.

func putSeq(b []byte, seq uint64) {
	for i := 0; i < len(b) && i < 8; i++ {
		b[i] = byte(seq >> (8 * i))
	}
}

// getSeq returns the sequence bytes of b as a number (the low bytes only
// when b is shorter than 8).
func getSeq(b []byte) uint64 {
	var s uint64
	for i := 0; i < len(b) && i < 8; i++ {
		s |= uint64(b[i]) << (8 * i)
	}
	return s
}

// seqMatches reports whether b carries seq (as far as its length shows).
func seqMatches(b []byte, seq uint64) bool {
	return getSeq(b) == seqLow(seq, len(b))
}

// seqLow is seq truncated to what a message of n bytes carries.
func seqLow(seq uint64, n int) uint64 {
	if n >= 8 {
		return seq
	}
	return seq & (1<<(8*n) - 1)
}

// isTimeout reports whether err is a deadline expiring.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialUDPServer opens the control connection to a UDP workload's server,
// reads its hello (the UDP port it listens on) and connects a UDP socket to
// that port on the same host (or where its engine published it: Env.Reach).
// closeAll closes both, and both are closed
// when ctx ends, so a blocked read returns.
func dialUDPServer(ctx context.Context, env workload.Env) (ctl *ctlConn, uc *net.UDPConn, hello udpHello, closeAll func(), err error) {
	target := env.Target
	ctl, err = dialCtl(ctx, target)
	if err != nil {
		return nil, nil, hello, nil, err
	}
	stop := closeOnDone(ctx, ctl)
	fail := func(e error) (*ctlConn, *net.UDPConn, udpHello, func(), error) {
		stop()
		ctl.Close()
		return nil, nil, hello, nil, e
	}
	if err := ctl.recv(&hello, ctlTimeout); err != nil {
		return fail(err)
	}
	host, err := targetHost(target)
	if err != nil {
		return fail(err)
	}
	// Where the server's engine published its UDP port, if it did.
	raddr, err := net.ResolveUDPAddr("udp", env.Reach(host, hello.Port, "udp"))
	if err != nil {
		return fail(fmt.Errorf("server's UDP address: %w", err))
	}
	uc, err = net.DialUDP("udp", nil, raddr)
	if err != nil {
		return fail(fmt.Errorf("connecting UDP to %s: %w", raddr, err))
	}
	stopU := closeOnDone(ctx, uc)
	return ctl, uc, hello, func() {
		stopU()
		uc.Close()
		stop()
		ctl.Close()
	}, nil
}

// udpMorePorts are a UDP workload's ports besides its control port: its
// UDP socket, on the control port's number when given one.
func udpMorePorts(workload.Values) []vocab.Port { return []vocab.Port{{Proto: "udp"}} }

// acceptUDPClient is the server side of dialUDPServer: it listens for the
// control connection and opens the UDP socket, announces readiness, and
// accepts the client. closeAll closes all of it, as does the end of ctx.
func acceptUDPClient(ctx context.Context, env workload.Env) (ctl *ctlConn, uc *net.UDPConn, closeAll func(), err error) {
	ln, err := listen(ctx, env)
	if err != nil {
		return nil, nil, nil, err
	}
	defer ln.Close()
	uc, err = listenUDP(env)
	if err != nil {
		return nil, nil, nil, err
	}
	stopU := closeOnDone(ctx, uc)
	env.Ready(ln.Addr().String())
	c, err := acceptOne(ctx, ln)
	if err != nil {
		stopU()
		uc.Close()
		return nil, nil, nil, fmt.Errorf("accepting the client: %w", err)
	}
	ctl = newCtlConn(c)
	stop := closeOnDone(ctx, ctl)
	return ctl, uc, func() {
		stop()
		ctl.Close()
		stopU()
		uc.Close()
	}, nil
}
