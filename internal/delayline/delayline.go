// Package delayline is ctrbench's userspace delay line, for kernels
// without netem: it carries the frames between two links of a network
// namespace, holding each frame one way for a delay (with jitter) or
// losing it, and passing the other way at once.
//
// Frames are read and written whole through packet sockets with virtio
// net headers (PACKET_VNET_HDR), so a TCP segment the kernel has not yet
// cut into frames (GSO) or checksummed crosses as one: the line's cost is
// per segment, not per 1500 bytes. Packets keep their order, as netem's
// do when a rate is set. Each frame's release time is waited for by a
// sleep and a spin of at most MaxSpin, since a thread's sleep on a virtual
// machine overshoots by tens to hundreds of microseconds. One thread per line
// waits for frames on both sides and for release times at once.
package delayline

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// Params is what the line does to each frame of the delayed direction.
type Params struct {
	Delay  time.Duration // mean time a frame is held
	Jitter time.Duration // standard deviation of that time
	Loss   float64       // probability a frame is lost
}

// Stats counts what a line did since it started.
type Stats struct {
	Frames   uint64  // frames carried the delayed way
	Back     uint64  // frames carried the other way
	Lost     uint64  // frames lost on purpose (Params.Loss)
	Overflow uint64  // frames dropped because the line held QueueFrames already
	Held     uint64  // frames held for a release time
	LateNs   uint64  // the sum over held frames of how late each left (ns)
	CPU      float64 // CPU seconds of the line's thread
}

const (
	// QueueFrames is the most frames the line holds at once.
	QueueFrames = 1 << 15
	// MaxSpin is the longest the line spins before a frame's release time
	// instead of sleeping.
	MaxSpin = time.Millisecond
	// maxFrame is the largest frame with its header: a 64 KiB GSO segment.
	maxFrame = 1<<16 + 512
	// smallFrame is the buffer size of frames up to an MTU of 1500.
	smallFrame = 2048
	vnetHdrLen = 10
	// dataValid is virtio's "checksum already checked" flag, which a
	// received header may carry and a sent one has no use for.
	dataValid = 2
	poll      = 100 * time.Millisecond
)

// Line is a running delay line.
type Line struct {
	host, sw int // packet sockets on the host side and the switch side
	params   atomic.Pointer[Params]
	stop     atomic.Bool
	done     chan struct{}
	epoch    time.Time

	frames, back, lost, overflow, held, late atomic.Uint64

	mu  sync.Mutex
	tid int
	err error
}

type frame struct {
	buf     *[]byte
	n       int
	release int64 // ns since epoch
}

var small = sync.Pool{New: func() any { b := make([]byte, smallFrame); return &b }}
var large = sync.Pool{New: func() any { b := make([]byte, maxFrame); return &b }}

// Start runs a line in the network namespace at nsPath: frames arriving
// on link hostSide leave by switchSide after p's delay (or are lost);
// frames arriving on switchSide leave by hostSide at once. Both links
// must exist and be up; neither may carry an address of its own.
func Start(nsPath, hostSide, switchSide string, p Params, seed uint64) (*Line, error) {
	l := &Line{host: -1, sw: -1, done: make(chan struct{}), epoch: time.Now()}
	l.Set(p)
	err := netns.Do(nsPath, func() error {
		var err error
		if l.host, err = open(hostSide); err != nil {
			return err
		}
		l.sw, err = open(switchSide)
		return err
	})
	if err != nil {
		l.closeFDs()
		return nil, fmt.Errorf("delay line %s → %s: %w", hostSide, switchSide, err)
	}
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	moreProcs(1)
	go l.run(&schedule{rnd: rnd})
	return l, nil
}

// procsMu guards the Go scheduler's processor count, which each running
// line raises by one: a line's thread spins or waits in system calls, and
// coming back from one it must find a free processor at once, not wait
// for the other line (or the campaign's own goroutines) to yield one.
var procsMu sync.Mutex

func moreProcs(n int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0)+n, 1))
}

// open makes a non-blocking packet socket bound to link name that reads
// what arrives on it (not what it sends) with a virtio net header before
// each frame.
func open(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return -1, err
	}
	proto := htons(unix.ETH_P_ALL)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(proto))
	if err != nil {
		return -1, fmt.Errorf("packet socket on %s: %w", name, err)
	}
	opts := []struct {
		level, opt, v int
	}{
		{unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1},
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1},
		{unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1},
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16 << 20},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16 << 20},
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("packet socket on %s: option %d: %w", name, o.opt, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("binding a packet socket to %s: %w", name, err)
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Set changes what the line does to the frames that arrive from now on.
func (l *Line) Set(p Params) { l.params.Store(&p) }

func (l *Line) now() int64 { return int64(time.Since(l.epoch)) }

// run is the line: one thread that waits for a frame on either side or
// for the next held frame's release time, whichever comes first, so no
// frame waits for another thread to wake.
func (l *Line) run(s *schedule) {
	defer close(l.done)
	runtime.LockOSThread() // never unlocked: the thread ends with the line
	// Sleeps end when asked, not up to 50 µs later.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	l.mu.Lock()
	l.tid = unix.Gettid()
	l.mu.Unlock()
	w := waker{margin: int64(MaxSpin) / 4}
	var held queue
	fds := []unix.PollFd{{Fd: int32(l.host), Events: unix.POLLIN}, {Fd: int32(l.sw), Events: unix.POLLIN}}
	for !l.stop.Load() {
		timeout, wake := int64(poll), int64(-1)
		if f, ok := held.head(); ok {
			wake = f.release - w.margin
			timeout = min(timeout, max(wake-l.now(), 0))
		}
		ts := unix.NsecToTimespec(timeout)
		n, err := unix.Ppoll(fds, &ts, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.fail(fmt.Errorf("waiting for frames: %w", err))
			return
		}
		if n == 0 && wake >= 0 {
			w.woke(l.now() - wake)
		}
		if fds[0].Revents != 0 && !l.fromHost(s, &held) {
			return
		}
		if fds[1].Revents != 0 && !l.fromSwitch() {
			return
		}
		if !l.release(s, &held, &w) {
			return
		}
	}
	for {
		f, ok := held.pop()
		if !ok {
			return
		}
		f.free()
	}
}

// fromHost reads every frame waiting on the host side: each is lost, sent
// at once (no delay asked and none held), or held until its release time.
func (l *Line) fromHost(s *schedule, held *queue) bool {
	for {
		b := large.Get().(*[]byte)
		n, ok := l.recv(l.host, *b)
		if n <= 0 {
			large.Put(b)
			return ok
		}
		p := l.params.Load()
		rel, kept := s.release(l.now(), *p)
		switch {
		case !kept:
			l.lost.Add(1)
			large.Put(b)
		case p.Delay == 0 && p.Jitter == 0 && held.len() == 0:
			l.frames.Add(1)
			l.send(l.sw, (*b)[:n])
			large.Put(b)
		case held.len() >= QueueFrames:
			l.overflow.Add(1)
			large.Put(b)
		default:
			l.frames.Add(1)
			if n <= smallFrame { // a frame of an MTU: keep 2 KiB, not 64
				sb := small.Get().(*[]byte)
				copy(*sb, (*b)[:n])
				large.Put(b)
				b = sb
			}
			held.push(frame{buf: b, n: n, release: rel})
		}
	}
}

// fromSwitch passes every frame waiting on the switch side to the host.
func (l *Line) fromSwitch() bool {
	b := large.Get().(*[]byte)
	defer large.Put(b)
	for {
		n, ok := l.recv(l.sw, *b)
		if n <= 0 {
			return ok
		}
		l.back.Add(1)
		l.send(l.host, (*b)[:n])
	}
}

// release sends the held frames that are due, spinning to the release
// time of those due within the waker's margin. While it spins it keeps
// both sides served, so frames the other way are not held up behind it.
func (l *Line) release(s *schedule, held *queue, w *waker) bool {
	for {
		f, ok := held.head()
		if !ok || f.release-l.now() > w.margin {
			return true
		}
		for l.now() < f.release {
			if !l.fromSwitch() || !l.fromHost(s, held) {
				return false
			}
		}
		held.pop()
		l.held.Add(1)
		l.late.Add(uint64(l.now() - f.release))
		l.send(l.sw, (*f.buf)[:f.n])
		f.free()
	}
}

// recv reads one frame into buf: (n, true) for a frame, (0, true) when
// none is waiting (or one was larger than any segment, not carried), and
// (0, false) when the socket failed.
func (l *Line) recv(fd int, buf []byte) (int, bool) {
	n, _, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
	switch {
	case err == nil && (n > len(buf) || n < vnetHdrLen):
		return l.recv(fd, buf)
	case err == nil:
		return n, true
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		return 0, true
	default:
		l.fail(fmt.Errorf("reading a frame: %w", err))
		return 0, false
	}
}

func (l *Line) send(fd int, b []byte) {
	b[0] &^= dataValid
	// A frame the kernel refuses (its link went down, its buffer is full)
	// is lost, as on a wire.
	_ = unix.Send(fd, b, unix.MSG_DONTWAIT)
}

func (l *Line) fail(err error) {
	l.mu.Lock()
	if l.err == nil && !l.stop.Load() {
		l.err = err
	}
	l.mu.Unlock()
}

func (f frame) free() {
	if cap(*f.buf) > smallFrame {
		large.Put(f.buf)
	} else {
		small.Put(f.buf)
	}
}

// waker learns how late this thread's timed waits end, so it wakes that
// much early and spins the rest. Like TCP's retransmission timer it keeps
// a moving mean of the overshoot and of its deviation, and wakes early by
// the mean plus four deviations (at least 20 µs, at most MaxSpin): an idle
// virtual CPU wakes late (here 70 µs at the median, 0.4–1 ms at the 99th
// percentile), so the margin grows where the machine needs it.
type waker struct {
	margin    int64 // ns
	late, dev float64
}

func (w *waker) woke(late int64) {
	x := float64(late)
	w.dev += (math.Abs(x-w.late) - w.dev) / 4
	w.late += (x - w.late) / 8
	w.margin = min(max(int64(w.late+4*w.dev), int64(20*time.Microsecond)), int64(MaxSpin))
}

// queue is a FIFO of held frames.
type queue struct {
	frames []frame
	first  int
}

func (q *queue) len() int { return len(q.frames) - q.first }

func (q *queue) head() (frame, bool) {
	if q.len() == 0 {
		return frame{}, false
	}
	return q.frames[q.first], true
}

func (q *queue) push(f frame) {
	if q.first > 0 && q.first == len(q.frames) {
		q.frames, q.first = q.frames[:0], 0
	}
	q.frames = append(q.frames, f)
}

func (q *queue) pop() (frame, bool) {
	f, ok := q.head()
	if ok {
		q.frames[q.first] = frame{}
		q.first++
		if q.first > 1024 && q.first*2 > len(q.frames) {
			q.frames = append(q.frames[:0], q.frames[q.first:]...)
			q.first = 0
		}
	}
	return f, ok
}

// Plus is the two counts together (several lines' in all).
func (s Stats) Plus(o Stats) Stats {
	return Stats{Frames: s.Frames + o.Frames, Back: s.Back + o.Back, Lost: s.Lost + o.Lost, Overflow: s.Overflow + o.Overflow,
		Held: s.Held + o.Held, LateNs: s.LateNs + o.LateNs, CPU: s.CPU + o.CPU}
}

// Stats reports what the line has done, and its thread's CPU time.
func (l *Line) Stats() Stats {
	st := Stats{Frames: l.frames.Load(), Back: l.back.Load(), Lost: l.lost.Load(), Overflow: l.overflow.Load(), Held: l.held.Load(), LateNs: l.late.Load()}
	l.mu.Lock()
	tid := l.tid
	l.mu.Unlock()
	if tid != 0 {
		st.CPU, _ = sysinfo.ThreadCPUSeconds(tid)
	}
	return st
}

// Close stops the line (within the poll interval) and closes its sockets.
// Frames it still held are dropped. It returns what made the line stop
// early, if anything did.
func (l *Line) Close() error {
	if l.stop.Swap(true) {
		return nil
	}
	<-l.done
	moreProcs(-1)
	l.closeFDs()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Line) closeFDs() {
	for _, fd := range []*int{&l.host, &l.sw} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// schedule decides each frame's fate: lost, or released at a time no
// earlier than the frame before it.
type schedule struct {
	rnd  *rand.Rand
	last int64
}

// release returns when a frame that arrived at now (ns) leaves, or false
// when it is lost.
func (s *schedule) release(now int64, p Params) (int64, bool) {
	if p.Loss > 0 && s.rnd.Float64() < p.Loss {
		return 0, false
	}
	d := float64(p.Delay)
	if p.Jitter > 0 {
		d += s.rnd.NormFloat64() * float64(p.Jitter)
	}
	t := now + max(int64(d), 0)
	t = max(t, s.last) // frames keep their order
	s.last = t
	return t, true
}
