package workloads

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// blockingSock drives a TCP connection with blocking read and write system
// calls on a descriptor of its own, as netperf and sockperf do, instead of
// through Go's netpoller. For a latency workload the difference is the
// measurement: with the netpoller a read that finds no data parks the
// goroutine, the runtime looks for other work and then sleeps in
// epoll_wait — extra system calls and wake-ups that, when client and server
// share a CPU, take that CPU from the peer about to answer. Measured on
// loopback with both ends on one CPU, the median round trip of net.tcp_rr
// was 1.75× sockperf's through the netpoller and 1.09× with this.
//
// The descriptor is a dup of the connection's, switched to blocking mode
// (which the connection shares; it is not used for I/O afterwards). Shutdown
// unblocks a read or write in progress, for cancellation.
type blockingSock struct {
	fd     int
	mu     sync.Mutex
	closed bool
}

func newBlockingSock(c *net.TCPConn) (*blockingSock, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		if nfd, derr = syscall.Dup(int(fd)); derr == nil {
			syscall.CloseOnExec(nfd)
			derr = syscall.SetNonblock(nfd, false)
		}
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		if nfd >= 0 {
			syscall.Close(nfd)
		}
		return nil, fmt.Errorf("making a blocking descriptor: %w", derr)
	}
	return &blockingSock{fd: nfd}, nil
}

// dialBlocking connects to target and returns the connection as a
// blockingSock that ctx's end shuts down; done releases both.
func dialBlocking(ctx context.Context, target string) (bs *blockingSock, done func(), err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", target, err)
	}
	if bs, err = newBlockingSock(conn.(*net.TCPConn)); err != nil {
		conn.Close()
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, bs.Shutdown)
	return bs, func() { stop(); bs.Close(); conn.Close() }, nil
}

// blockingTimeout is what a read returns when SetRecvTimeout expires.
type blockingTimeout struct{}

func (blockingTimeout) Error() string   { return "receive timed out" }
func (blockingTimeout) Timeout() bool   { return true }
func (blockingTimeout) Temporary() bool { return true }

func (b *blockingSock) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(b.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, blockingTimeout{}
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write first sends without waiting (MSG_DONTWAIT) as a raw system call
// (rawWrite, the HTTP generator's send too), which cannot block and so need
// not be announced to the Go scheduler; only when the socket buffer is
// full does it fall back to a blocking write. The
// announcement matters on a shared CPU: the send wakes the peer, the kernel
// may run the peer at once, and a thread the scheduler believes is in a
// system call that long has its P taken away and another thread woken
// (measured: about 10 times fewer futex wake-ups, 20% more transactions per
// second, the median unchanged).
func (b *blockingSock) Write(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		r, e := rawWrite(b.fd, p[w:])
		switch e {
		case nil:
			w += r
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
		default:
			return w, e
		}
		n, err := syscall.Write(b.fd, p[w:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return w, err
		}
		w += n
	}
	return w, nil
}

// SetRecvTimeout makes a read that waits longer than d fail (SO_RCVTIMEO).
func (b *blockingSock) SetRecvTimeout(d time.Duration) error {
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	return syscall.SetsockoptTimeval(b.fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
}

// CloseWrite sends the end of stream.
func (b *blockingSock) CloseWrite() error { return syscall.Shutdown(b.fd, syscall.SHUT_WR) }

// Shutdown ends both directions, waking any read or write in progress; safe
// from any goroutine, and after Close.
func (b *blockingSock) Shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		_ = syscall.Shutdown(b.fd, syscall.SHUT_RDWR)
	}
}

// Close releases the descriptor once no read or write is in progress.
func (b *blockingSock) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return syscall.Close(b.fd)
}

// yielder hands the scheduler a turn (runtime.Gosched) every 5 ms from a
// goroutine that otherwise never gives one: a ping-pong loop only goes in
// and out of system calls, and a system call is not a turn. After 10 ms on
// one turn, the runtime's monitor (sysmon) preempts the goroutine and,
// finding it in a read, takes its processor away — another thread woken
// to hold it, the read returning into the scheduler's slow path — and
// starts polling every 20 µs again instead of every 10 ms. With client and
// server pinned to one CPU, perf (sched_switch with call graphs) showed
// each process's monitor waking about 2,500 times a second (runtime.retake
// → handoffp every 10 ms, then runtime.sysmon → usleep), each wake-up
// taking the CPU from the transaction in flight: net.tcp_rr's p99 was 2.2×
// sockperf's. With a turn every 5 ms the monitor backs off to 100 wake-ups
// a second. The loop must not be locked to its thread (LockOSThread): a
// locked goroutine's turn hands its processor to another thread and back,
// two futex wake-ups each time.
type yielder struct{ last time.Time }

func (y *yielder) tick(now time.Time) {
	if now.Sub(y.last) >= 5*time.Millisecond {
		y.last = now
		runtime.Gosched()
	}
}
