package workloads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The load generator's engine, built as wrk is: one event loop per CPU the
// generator may use, each on its own OS thread, driving its share of the
// connections with non-blocking sockets and epoll, writing the same
// request again and again and reading Content-Length responses into a
// buffer of each connection's. A goroutine per connection through Go's
// netpoller costs a failed read, a park, a netpoll wake-up and a second
// read per response — CPU the generator then takes from the servers it
// loads when they share the machine's cores (measured: 0.65–0.79× wrk's
// rate against the same pong). Open loop (rate > 0), each loop's share of
// the schedule is kept by a timerfd, to the nanosecond.

// loadPlan is what the engine runs.
type loadPlan struct {
	target  string // host:port
	path    string
	size    int    // bytes every response body must have
	want    []byte // the body pong sends for size
	conns   int
	dur     time.Duration
	rate    float64 // requests per second, open loop; 0 = closed loop
	timeout time.Duration
	newLat  func() *latencies
}

// loadTally is what one event loop counted: latencies of correct
// responses, their number and bytes, and the errors.
type loadTally struct {
	lat     *latencies
	ok      int64
	bytes   int64
	errs    int64
	lastErr string
}

func (t *loadTally) fail(err error) {
	t.errs++
	t.lastErr = err.Error()
}

// runLoad drives the plan's connections until its duration has passed and
// every request sent (or due, open loop) has been answered or has failed.
// It returns every loop's tally merged and the time from the start to the
// last answer.
func runLoad(ctx context.Context, pl loadPlan) (loadTally, time.Duration, error) {
	req := []byte("GET " + pl.path + " HTTP/1.1\r\nHost: " + pl.target + "\r\nUser-Agent: ctrbench\r\n\r\n")
	procs := runtime.GOMAXPROCS(0)
	nloops := max(1, min(procs, pl.conns))
	// One processor more than loops. A loop waits in epoll_wait, a system
	// call; when every processor is in one, the runtime's monitor takes
	// them back and hands them to other threads (a futex wake-up and a
	// sleep per wait, and the monitor polling every 20 µs), CPU the
	// servers on the same cores lose. With an idle processor left, a
	// short wait keeps its own. Measured against one pong on loopback,
	// 2 CPUs: 0.80 → 0.71 context switches and 14.3–16.2 → 12.4–14.7 µs
	// of CPU per request, +7% requests/s (wrk: 0.54–0.58 and 12.5 µs).
	runtime.GOMAXPROCS(nloops + 1)
	defer runtime.GOMAXPROCS(procs)
	loops := make([]*evLoop, nloops)
	start := time.Now()
	for i := range loops {
		// A loop's own address: a unix.Sockaddr keeps its encoded form
		// inside, written on every connect().
		sa, err := sockaddrOf(pl.target)
		if err != nil {
			return loadTally{}, 0, err
		}
		l := &evLoop{plan: &pl, sa: sa, req: req, index: i, nloops: nloops, start: start, deadline: start.Add(pl.dur), tfd: -1, tally: loadTally{lat: pl.newLat()}}
		for c := i; c < pl.conns; c += nloops {
			l.conns = append(l.conns, &evConn{fd: -1})
		}
		loops[i] = l
	}
	errs := make([]error, nloops)
	var wg sync.WaitGroup
	for i, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.run(ctx)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := loadTally{lat: pl.newLat()}
	for i, l := range loops {
		if errs[i] != nil {
			return all, elapsed, errs[i]
		}
		all.lat.merge(l.tally.lat)
		all.ok += l.tally.ok
		all.bytes += l.tally.bytes
		all.errs += l.tally.errs
		if l.tally.lastErr != "" {
			all.lastErr = l.tally.lastErr
		}
	}
	return all, elapsed, ctx.Err()
}

func sockaddrOf(target string) (unix.Sockaddr, error) {
	a, err := net.ResolveTCPAddr("tcp", target)
	if err != nil {
		return nil, fmt.Errorf("the target %q: %w", target, err)
	}
	if ip4 := a.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], ip4)
		return sa, nil
	}
	sa := &unix.SockaddrInet6{Port: a.Port}
	copy(sa.Addr[:], a.IP.To16())
	if a.Zone != "" {
		if ifi, err := net.InterfaceByName(a.Zone); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa, nil
}

type connState int

const (
	connClosed     connState = iota // no socket; dialled for the next request
	connConnecting                  // connect() in progress, a request waiting for it
	connBusy                        // request sent, reading the response
	connIdle                        // connected, nothing to send (open loop)
)

// evConn is one connection of a loop.
type evConn struct {
	fd       int
	state    connState
	intended time.Time // the latency's origin: when the request was due
	expires  time.Time // the request fails when it has no full response by then
	buf      []byte
	n        int   // bytes of the response read so far
	answered int64 // correct responses on all of this connection's sockets
}

// evLoop is one event loop: its connections, its share of an open loop's
// schedule, and its tally.
type evLoop struct {
	plan          *loadPlan
	sa            unix.Sockaddr
	req           []byte
	index, nloops int
	start         time.Time
	deadline      time.Time // start + the duration: no closed-loop request, nor open-loop due time, after it
	conns         []*evConn
	byFD          map[int]*evConn
	ep, tfd       int
	tally         loadTally
	// Open loop: the number of this loop's next request in the schedule,
	// the due times not yet sent (no connection was free), and whether
	// the schedule has run past the duration.
	next     int64
	queue    []time.Time
	schedEnd bool
}

// run is the loop's life: it starts the requests (an open loop on its
// schedule, a closed loop one per connection at once), then turns epoll
// events into progress on its connections until the duration is over
// and nothing is in flight, or ctx ends.
func (l *evLoop) run(ctx context.Context) error {
	var err error
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	defer unix.Close(l.ep)
	l.byFD = map[int]*evConn{}
	defer func() {
		for _, c := range l.conns {
			l.closeConn(c)
		}
	}()
	if l.plan.rate > 0 {
		if l.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
			return fmt.Errorf("timerfd: %w", err)
		}
		defer unix.Close(l.tfd)
		if err := l.startOpenLoop(); err != nil {
			return err
		}
	} else {
		now := time.Now()
		for _, c := range l.conns {
			l.send(c, now)
		}
	}
	events := make([]unix.EpollEvent, len(l.conns)+1)
	lastScan := time.Now()
	var turns yielder
	for {
		if ctx.Err() != nil {
			return nil
		}
		if l.finished() {
			return nil
		}
		n, err := rawEpollWait(l.ep, events, 50)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		now := time.Now()
		turns.tick(now)
		l.handle(events[:max(n, 0)], now)
		if l.plan.rate > 0 {
			if err := l.schedule(now); err != nil {
				return err
			}
		}
		if now.Sub(lastScan) > 10*time.Millisecond {
			lastScan = now
			l.expire(now)
		}
	}
}

// startOpenLoop watches the loop's timer (already created), leaves every
// connection idle until its first request is due, and queues the
// requests due now.
func (l *evLoop) startOpenLoop() error {
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, l.tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.tfd)}); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	for _, c := range l.conns {
		c.state = connIdle // dialled when its first request is due
	}
	return l.schedule(time.Now())
}

// handle moves each connection that has an event forward: a connect
// that finished, a response to read, an idle connection the server
// closed. The timer's events are only drained: schedule reads the clock.
func (l *evLoop) handle(events []unix.EpollEvent, now time.Time) {
	for _, ev := range events {
		fd := int(ev.Fd)
		if fd == l.tfd {
			var b [8]byte
			_, _ = unix.Read(l.tfd, b[:])
			continue
		}
		c := l.byFD[fd]
		if c == nil {
			continue
		}
		switch c.state {
		case connConnecting:
			l.connected(c, now)
		case connBusy:
			l.readable(c, now)
		case connIdle:
			// The server closed an idle connection (or sent what was
			// not asked for): dial again for the next request.
			l.closeConn(c)
			c.state = connIdle
		}
	}
}

// expire fails the requests that have had no full response within the
// timeout, each connection going on to its next request, and in a
// closed loop dials again where a dial failed at once.
func (l *evLoop) expire(now time.Time) {
	for _, c := range l.conns {
		switch {
		case (c.state == connBusy || c.state == connConnecting) && now.After(c.expires):
			l.tally.fail(fmt.Errorf("no full response within %s", l.plan.timeout))
			l.closeConn(c)
			l.nextRequest(c, now)
		case c.state == connClosed && l.plan.rate == 0:
			// A dial that failed at once: try again.
			l.nextRequest(c, now)
		}
	}
}

// finished: the duration is over and no request is in flight or due.
func (l *evLoop) finished() bool {
	if l.plan.rate > 0 {
		if !l.schedEnd || len(l.queue) > 0 {
			return false
		}
	} else if time.Now().Before(l.deadline) {
		return false
	}
	for _, c := range l.conns {
		if c.state == connBusy || c.state == connConnecting {
			return false
		}
	}
	return true
}

// schedule queues this loop's requests due by now (request k of the
// whole schedule is due at start + k/rate and belongs to loop k mod
// nloops), hands them to free connections, and sets the timer for the
// next one.
func (l *evLoop) schedule(now time.Time) error {
	interval := float64(time.Second) / l.plan.rate
	due := func(j int64) time.Time {
		return l.start.Add(time.Duration(float64(j*int64(l.nloops)+int64(l.index)) * interval))
	}
	for !l.schedEnd {
		t := due(l.next)
		if t.After(l.deadline) {
			l.schedEnd = true
			break
		}
		if t.After(now) {
			break
		}
		l.queue = append(l.queue, t)
		l.next++
	}
	for _, c := range l.conns {
		if len(l.queue) == 0 {
			break
		}
		if c.state == connIdle || c.state == connClosed {
			l.sendQueued(c)
		}
	}
	if l.schedEnd {
		return nil
	}
	wait := max(time.Until(due(l.next)), time.Microsecond)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(wait))}
	if err := unix.TimerfdSettime(l.tfd, 0, &spec, nil); err != nil {
		return fmt.Errorf("timerfd: %w", err)
	}
	return nil
}

// nextRequest gives a connection whose request ended its next one: closed loop,
// at once until the duration is over; open loop, the oldest due request
// not yet sent, else it waits idle.
func (l *evLoop) nextRequest(c *evConn, now time.Time) {
	if l.plan.rate > 0 {
		if len(l.queue) > 0 {
			l.sendQueued(c)
			return
		}
		if c.state != connClosed {
			c.state = connIdle
		}
		return
	}
	if now.Before(l.deadline) {
		l.send(c, now)
		return
	}
	if c.state != connClosed {
		c.state = connIdle
	}
}

// sendQueued sends the oldest due request not yet sent on c.
func (l *evLoop) sendQueued(c *evConn) {
	t := l.queue[0]
	l.queue = l.queue[1:]
	l.send(c, t)
}

// send starts a request due at intended: at once on a connected socket,
// else once a new connection is up.
func (l *evLoop) send(c *evConn, intended time.Time) {
	c.intended = intended
	c.expires = time.Now().Add(l.plan.timeout)
	if c.fd < 0 {
		if err := l.dial(c); err != nil {
			l.tally.fail(err)
			c.state = connClosed
			return
		}
		c.state = connConnecting
		return
	}
	l.write(c)
}

func (l *evLoop) dial(c *evConn) error {
	domain := unix.AF_INET
	if _, ok := l.sa.(*unix.SockaddrInet6); ok {
		domain = unix.AF_INET6
	}
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err := unix.Connect(fd, l.sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return fmt.Errorf("connecting to %s: %w", l.plan.target, err)
	}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(fd)}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("epoll: %w", err)
	}
	c.fd, c.n = fd, 0
	l.byFD[fd] = c
	return nil
}

// connected: the socket of a connecting connection is writable; the
// connection is up or refused.
func (l *evLoop) connected(c *evConn, now time.Time) {
	soErr, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soErr != 0 {
		err = unix.Errno(soErr)
	}
	if err == nil {
		err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd)})
	}
	if err != nil {
		l.tally.fail(fmt.Errorf("connecting to %s: %w", l.plan.target, err))
		l.closeConn(c)
		// An open loop's due requests fail one by one. A closed loop's
		// next request waits for the loop's scan (every 10 to 50 ms):
		// dialled again at once, a refused connection would spin the loop
		// — 1,700 refusals in 100 ms from two connections, each an error.
		if l.plan.rate > 0 {
			l.nextRequest(c, now)
		}
		return
	}
	l.write(c)
}

// write sends the request. Nothing is pipelined, so a connection's send
// buffer is empty and the request (under 200 bytes) goes in one call.
func (l *evLoop) write(c *evConn) {
	c.state = connBusy
	c.n = 0
	for {
		n, err := rawWrite(c.fd, l.req)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == len(l.req) {
			return
		}
		if err == nil {
			err = fmt.Errorf("wrote %d of the request's %d bytes", n, len(l.req))
		}
		l.tally.fail(fmt.Errorf("sending: %w", err))
		l.closeConn(c)
		l.nextRequest(c, time.Now())
		return
	}
}

// The loop's system calls are raw: the runtime is not told of them. Its
// sockets are non-blocking, so a read or write cannot wait; epoll_wait
// can, for at most 50 ms, on a processor of its own (runLoad gives the
// loops one more than they use). Announced, a wait longer than 20 µs had
// its processor taken by the runtime's monitor and handed to another
// thread, and the monitor polled every 20 µs: against nginx on 2 CPUs,
// strace counted per 6,700 requests 3,640 nanosleeps and 607 futex calls
// besides the 6,700 reads and writes and 2,000 waits, and the generator
// spent 33 µs of CPU per request where wrk spent 25. The loop is not
// locked to its thread and yields every 5 ms (yielder), so the monitor
// has no cause to preempt it.
func rawEpollWait(ep int, events []unix.EpollEvent, msec int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawRead(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// readable reads what arrived for a busy connection and, once the whole
// response is in, checks and records it and starts the next request.
func (l *evLoop) readable(c *evConn, now time.Time) {
	eof := false
	for {
		if c.n == len(c.buf) {
			c.buf = append(c.buf, make([]byte, max(64<<10, len(c.buf)))...)
		}
		n, err := rawRead(c.fd, c.buf[c.n:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			l.tally.fail(fmt.Errorf("receiving: %w", err))
			l.closeConn(c)
			l.nextRequest(c, now)
			return
		}
		if n == 0 {
			eof = true
			break
		}
		c.n += n
		if c.n < len(c.buf) {
			break // a short read: the socket is drained
		}
	}
	status, body, keep, complete, err := parseResponse(c.buf[:c.n])
	switch {
	case err == nil && !complete && eof:
		err = fmt.Errorf("the connection closed after %d bytes of the response", c.n)
	case err == nil && !complete:
		return // more to come
	}
	if err == nil {
		c.answered++
		err = checkBody(status, body, l.plan.size, l.plan.want, c.answered)
	}
	if err != nil {
		l.tally.fail(err)
		l.closeConn(c)
		l.nextRequest(c, now)
		return
	}
	l.tally.ok++
	l.tally.bytes += int64(len(body))
	l.tally.lat.record(time.Since(c.intended))
	if !keep || eof {
		l.closeConn(c)
	}
	l.nextRequest(c, now)
}

func (l *evLoop) closeConn(c *evConn) {
	if c.fd >= 0 {
		_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
		delete(l.byFD, c.fd)
		unix.Close(c.fd)
		c.fd = -1
	}
	c.state, c.n = connClosed, 0
}

var errChunked = errors.New("response without Content-Length (chunked or streamed) is not supported")

// parseResponse reads an HTTP/1.1 response from what has arrived: complete
// once the headers and Content-Length bytes of body are in. More bytes than
// that are an error: nothing is pipelined.
func parseResponse(b []byte) (status int, body []byte, keep, complete bool, err error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) > 64<<10 {
			return 0, nil, false, false, errors.New("response headers over 64 KiB")
		}
		return 0, nil, false, false, nil
	}
	head := b[:end+2]
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, false, fmt.Errorf("malformed status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, false, false, fmt.Errorf("malformed status line %q", line)
	}
	length := -1
	keep = true
	for len(rest) > 0 {
		var h []byte
		h, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "connection") && asciiEqualFold(value, "close"):
			keep = false
		case asciiEqualFold(name, "transfer-encoding"):
			return 0, nil, false, false, errChunked
		}
	}
	if length < 0 {
		return 0, nil, false, false, errChunked
	}
	start := end + 4
	switch {
	case len(b) < start+length:
		return status, nil, keep, false, nil
	case len(b) > start+length:
		return 0, nil, false, false, fmt.Errorf("%d bytes after the %d-byte response", len(b)-start-length, start+length)
	}
	return status, b[start:], keep, true, nil
}

// checkBody validates a response: status 200 and pong's body for the size,
// its first, middle and last byte every time and, every 16th response of a
// connection, every byte (systematic corruption is caught at a fraction of
// the cost).
func checkBody(status int, body []byte, size int, want []byte, count int64) error {
	n := len(body)
	switch {
	case status != 200:
		return fmt.Errorf("status %d", status)
	case n != size:
		return fmt.Errorf("body of %d bytes, want %d", n, size)
	case body[0] != want[0] || body[n-1] != want[n-1] || body[n/2] != want[n/2]:
		return errors.New("body content differs from pong's pattern")
	case count%16 == 1 && !bytes.Equal(body, want):
		return errors.New("body content differs from pong's pattern")
	}
	return nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
