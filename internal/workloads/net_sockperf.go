package workloads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var sockperfTool = workload.Tool{Binary: "sockperf", Package: "sockperf"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "net.sockperf",
		Summary: "sockperf ping-pong (round-trip latency) or throughput (message rate), TCP or UDP, parsed from sockperf's summary",
		Params: []workload.Param{
			workload.P("mode", workload.Enum, "ping-pong", "ping-pong: one message in flight, round-trip latency; throughput: messages as fast as possible, rate").OneOf("ping-pong", "throughput"),
			workload.P("protocol", workload.Enum, "tcp", "transport").OneOf("tcp", "udp"),
			workload.P("msg_size", workload.Size, "0", "bytes per message (-m), 14 to 65507; 0 picks 64 for ping-pong and 1472 for throughput").Range(0, 65507),
			workload.P("duration", workload.Duration, "5s", "test time (-t); sockperf takes whole seconds, so it is rounded up, and ping-pong statistics leave out the first 400ms (warm-up) and the tail").Range(1, 86400),
		},
		Metrics: []workload.Metric{
			{Name: "latency_avg", Unit: "µs", Better: result.Lower, Doc: "ping-pong: mean round trip (sockperf --full-rtt)", Combine: workload.WeightedBy("sent")},
			{Name: "latency_p50", Unit: "µs", Better: result.Lower, Doc: "ping-pong: median round trip", Combine: workload.PairsOnly},
			{Name: "latency_p99", Unit: "µs", Better: result.Lower, Doc: "ping-pong: 99th percentile round trip", Combine: workload.PairsOnly},
			{Name: "latency_p999", Unit: "µs", Better: result.Lower, Doc: "ping-pong: 99.9th percentile round trip", Combine: workload.PairsOnly},
			{Name: "msg_per_sec", Unit: "msg/s", Better: result.Higher, Doc: "throughput: messages the client sent per second"},
			{Name: "mbps", Unit: "Mbit/s", Better: result.Higher, Doc: "throughput: msg_per_sec × msg_size × 8 / 10^6 (sockperf's own \"Mbps\" is MiB/s × 8)"},
			{Name: "loss_pct", Unit: "%", Better: result.Lower, Doc: "UDP only: ping-pong, the messages sockperf counted dropped; throughput, the messages the server did not receive, of all sent", Combine: workload.WeightedBy("sent")},
			{Name: "sent", Unit: "messages", Better: result.Higher, Doc: "messages the statistics cover: ping-pong, sockperf's valid window; throughput, all the client sent. What loss_pct is a share of, and what weighs latency_avg over pairs", Combine: workload.Count},
		},
		Roles: []string{workload.Server, workload.Client},
		Tools: []workload.Tool{sockperfTool},
		Run:   map[string]workload.RunFunc{workload.Server: sockperfServer, workload.Client: sockperfClient},
		Smoke: map[string]string{"duration": "1s"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("its duration in whole seconds + %d s sockperf takes around it", sockperfAround),
				Time:  sockperfTime,
			},
		},
	})
}

// sockperfTime is the dry run's estimate of a trial: the test's whole
// seconds and sockperf's own start and end.
func sockperfTime(p workload.Values, _ int) (time.Duration, bool) {
	return time.Duration(math.Ceil(p.Duration("duration").Seconds())+sockperfAround) * time.Second, true
}

// How the sockperf server is run and ended. sockperf's server never ends
// by itself and is silent about clients, so ctrbench's server role is a
// supervisor:
//
//  1. It picks a free port, starts `sockperf server` on the bind address,
//     and waits until the kernel's socket table (/proc/self/net) shows the
//     socket listening (TCP) or bound (UDP) — no probe connection that
//     sockperf would count, and no reliance on how sockperf buffers stdout.
//  2. It announces its own control listener, not sockperf's port. The
//     client connects to it, learns sockperf's port, runs the sockperf
//     client, and then reports how many messages that sent.
//  3. The supervisor waits until sockperf has taken in everything — TCP: no
//     connection to its port left established or half-closed (sockperf
//     closes its side only after reading the client's end of stream); UDP:
//     its receive queue stays empty — then stops it with SIGINT, on which
//     sockperf prints "Total N messages received and handled".
//  4. It sends N back; the client checks it against what it sent.
//
// So the server ends as soon as its client is done, whatever the protocol,
// and its count validates the client's: the two sides of one test agree or
// the trial fails.

// sockperfSettle bounds step 3; a variable so tests can shorten it.
var sockperfSettle = 5 * time.Second

type sockperfHello struct {
	Port int `json:"port"`
}

type sockperfDone struct {
	Sent uint64 `json:"sent"`
}

type sockperfReport struct {
	Received uint64 `json:"received"`
}

// lockedBuffer collects a tool's output from the goroutines exec starts.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freeUDPPort asks the kernel for an unused UDP port on bind (released
// before sockperf binds it, like freePort for TCP).
func freeUDPPort(bind string) (int, error) {
	c, err := net.ListenPacket("udp", net.JoinHostPort(bind, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free UDP port on %s: %w", bind, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

func sockperfServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(sockperfTool)
	if err != nil {
		return nil, "", err
	}
	udp := p.String("protocol") == "udp"
	bind, bindIP, port, err := sockperfAddr(env.Bind, udp)
	if err != nil {
		return nil, "", err
	}
	ln, err := listen(ctx, env)
	if err != nil {
		return nil, "", err
	}
	defer ln.Close()

	args := []string{"server", "-i", bind, "-p", strconv.Itoa(port)}
	if !udp {
		args = append(args, "--tcp")
	}
	srv := &sockperfProc{cmd: toolCommand(ctx, path, args...)}
	if err := srv.start(); err != nil {
		return nil, "", err
	}
	defer srv.kill()
	proto := "tcp"
	if udp {
		proto = "udp"
	}
	fail := func(err error) ([]result.Observation, string, error) {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, strings.TrimSpace(srv.out.String()), err
	}

	// 1. Listening?
	if err := srv.waitListening(ctx, proto, bindIP, port, udp); err != nil {
		return fail(err)
	}

	// 2. The client.
	env.Ready(ln.Addr().String())
	c, err := acceptOne(ctx, ln)
	if err != nil {
		return fail(fmt.Errorf("accepting the client: %w", err))
	}
	ctl := newCtlConn(c)
	defer ctl.Close()
	stop := closeOnDone(ctx, ctl)
	defer stop()
	if err := ctl.send(sockperfHello{Port: port}); err != nil {
		return fail(err)
	}
	var done sockperfDone
	if err := ctl.recv(&done, 0); err != nil {
		return fail(fmt.Errorf("the client ended without its count: %w", err))
	}

	// 3. Drained, then stopped.
	if err := sockperfSettled(ctx, proto, bindIP, port); err != nil {
		logf(env, "sockperf: %v; stopping it anyway", err)
	}
	_ = srv.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-srv.exited:
	case <-time.After(5 * time.Second):
		return fail(fmt.Errorf("sockperf server did not stop within 5s of SIGINT"))
	}
	received, err := parseSockperfServer(srv.out.String())
	if err != nil {
		return fail(err)
	}

	// 4. Its count.
	if err := ctl.send(sockperfReport{Received: received}); err != nil {
		return fail(err)
	}
	return nil, "", nil
}

// sockperfAddr is the server's bind address (all IPv4 addresses when the
// role has none) and a free port on it.
func sockperfAddr(bind string, udp bool) (string, net.IP, int, error) {
	if bind == "" {
		bind = "0.0.0.0"
	}
	bindIP := net.ParseIP(bind)
	if bindIP == nil || bindIP.To4() == nil {
		return "", nil, 0, fmt.Errorf("sockperf needs an IPv4 bind address, not %q", bind)
	}
	var port int
	var err error
	if udp {
		port, err = freeUDPPort(bind)
	} else {
		port, err = freePort(bind)
	}
	return bind, bindIP, port, err
}

// sockperfProc is a running sockperf server: its output, and its end.
type sockperfProc struct {
	cmd     *exec.Cmd
	out     lockedBuffer
	exited  chan struct{}
	waitErr error
}

func (s *sockperfProc) start() error {
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting sockperf: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	return nil
}

// kill ends the server if it has not ended, and waits for it.
func (s *sockperfProc) kill() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// waitListening waits until the server has its socket on bindIP:port (a
// listening one for TCP).
func (s *sockperfProc) waitListening(ctx context.Context, proto string, bindIP net.IP, port int, udp bool) error {
	for {
		socks, err := procNetSockets(proto)
		if err != nil {
			return err
		}
		for _, sk := range socketsOn(socks, bindIP, port) {
			if udp || sk.State == tcpListen {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("sockperf server exited before listening on %s:%d (%v): %s", bindIP, port, s.waitErr, lastLine(s.out.String()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sockperfSettled waits until sockperf has read everything sent to it:
// TCP, no connection on its port established or half-closed; UDP, its
// receive queue empty twice in a row.
func sockperfSettled(ctx context.Context, proto string, ip net.IP, port int) error {
	deadline := time.Now().Add(sockperfSettle)
	quiet := 0
	for {
		socks, err := procNetSockets(proto)
		if err != nil {
			return err
		}
		busy := false
		for _, s := range socketsOn(socks, ip, port) {
			switch {
			case proto == "udp":
				busy = busy || s.RxQueue > 0
			default:
				busy = busy || s.State == tcpEstablished || s.State == tcpCloseWait
			}
		}
		if busy {
			quiet = 0
		} else if quiet++; quiet >= 2 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("its %s port %d still had unread data after %s", proto, port, sockperfSettle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sockperfClient learns the sockperf server's port from ctrbench's
// server, runs the sockperf client against it, checks its count against
// the server's and reports latency (ping-pong) or rate (throughput).
func sockperfClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(sockperfTool)
	if err != nil {
		return nil, "", err
	}
	test, err := newSockperfTest(p)
	if err != nil {
		return nil, "", err
	}
	ctl, err := dialCtl(ctx, env.Target)
	if err != nil {
		return nil, "", err
	}
	defer ctl.Close()
	stop := closeOnDone(ctx, ctl)
	defer stop()
	var hello sockperfHello
	if err := ctl.recv(&hello, ctlTimeout); err != nil {
		return nil, "", err
	}
	host, err := targetHost(env.Target)
	if err != nil {
		return nil, "", err
	}

	secs := int(math.Ceil(p.Duration("duration").Seconds()))
	// sockperf can wait forever on a dead server; bound it by the test time.
	cctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	_, raw, runErr := runTool(cctx, path, test.args(host, hello.Port, secs)...)
	if runErr != nil {
		return nil, raw, runErr
	}
	res, err := parseSockperfClient(raw, test.mode)
	if err != nil {
		return nil, raw, err
	}

	if err := ctl.send(sockperfDone{Sent: res.Sent}); err != nil {
		return nil, raw, err
	}
	var rep sockperfReport
	if err := ctl.recv(&rep, ctlTimeout+sockperfSettle); err != nil {
		return nil, raw, fmt.Errorf("reading the server's count: %w", err)
	}
	logf(env, "sockperf: client sent %d messages, server received %d", res.Sent, rep.Received)
	if err := test.check(res, rep); err != nil {
		return nil, raw, err
	}
	return test.observations(res, rep), "", nil
}

// sockperfTest is what the client's sockperf run tests: its mode, its
// protocol and its message size.
type sockperfTest struct {
	mode string // ping-pong or throughput
	udp  bool
	size int64 // bytes per message
}

// newSockperfTest reads the test from the workload's parameters, a
// msg_size of 0 being the mode's default, and refuses a message smaller
// than sockperf sends.
func newSockperfTest(p workload.Values) (sockperfTest, error) {
	t := sockperfTest{mode: p.String("mode"), udp: p.String("protocol") == "udp", size: p.Int("msg_size")}
	if t.size == 0 {
		t.size = map[string]int64{"ping-pong": 64, "throughput": 1472}[t.mode]
	}
	if t.size < 14 {
		return t, fmt.Errorf("msg_size %d is below sockperf's minimum of 14 bytes", t.size)
	}
	return t, nil
}

// args is the sockperf client's command line for a test of secs seconds
// against port on host.
func (t sockperfTest) args(host string, port, secs int) []string {
	args := []string{t.mode, "-i", host, "-p", strconv.Itoa(port), "-t", strconv.Itoa(secs), "-m", strconv.FormatInt(t.size, 10)}
	if !t.udp {
		args = append(args, "--tcp")
	}
	if t.mode == "ping-pong" {
		args = append(args, "--full-rtt") // round trips, like net.tcp_rr, not sockperf's default half
	}
	return args
}

// check compares the server's count with the client's: over TCP they
// are equal; over UDP the server may have received fewer, never more.
func (t sockperfTest) check(res sockperfResult, rep sockperfReport) error {
	switch {
	case !t.udp && rep.Received != res.Sent:
		return fmt.Errorf("validation: the sockperf server handled %d messages, the client sent %d", rep.Received, res.Sent)
	case t.udp && rep.Received > res.Sent:
		return fmt.Errorf("validation: the sockperf server handled %d messages, more than the %d the client sent", rep.Received, res.Sent)
	}
	return nil
}

// observations are the test's metrics: ping-pong's round trips over
// sockperf's valid window, or throughput's message and bit rates; with
// the loss over UDP.
func (t sockperfTest) observations(res sockperfResult, rep sockperfReport) []result.Observation {
	var obs []result.Observation
	if t.mode == "ping-pong" {
		us := func(name string, v float64) result.Observation {
			return result.Observation{Metric: name, Value: v, Unit: "µs", Better: result.Lower}
		}
		obs = append(obs, us("latency_avg", res.Avg), us("latency_p50", res.P50), us("latency_p99", res.P99), us("latency_p999", res.P999),
			result.Observation{Metric: "sent", Value: float64(res.ValidSent), Unit: "messages", Better: result.Higher})
		if t.udp {
			obs = append(obs, result.Observation{Metric: "loss_pct", Value: 100 * float64(res.Dropped) / float64(res.ValidSent), Unit: "%", Better: result.Lower})
		}
	} else {
		obs = append(obs,
			result.Observation{Metric: "msg_per_sec", Value: res.MsgPerSec, Unit: "msg/s", Better: result.Higher},
			result.Observation{Metric: "mbps", Value: res.MsgPerSec * float64(t.size) * 8 / 1e6, Unit: "Mbit/s", Better: result.Higher},
			result.Observation{Metric: "sent", Value: float64(res.Sent), Unit: "messages", Better: result.Higher},
		)
		if t.udp {
			obs = append(obs, result.Observation{Metric: "loss_pct", Value: 100 * float64(res.Sent-rep.Received) / float64(res.Sent), Unit: "%", Better: result.Lower})
		}
	}
	return obs
}

// sockperfResult is what ctrbench reads from the sockperf client's output.
type sockperfResult struct {
	Sent uint64 // every message the client sent, warm-up included: what the server counts
	// ping-pong, over sockperf's valid window (warm-up and tail left out)
	ValidSent, Dropped  uint64
	Avg, P50, P99, P999 float64 // µs, full round trips
	// throughput
	MsgPerSec float64
}

var (
	ansiEscape     = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	spTotalRun     = regexp.MustCompile(`\[Total Run\] RunTime=[0-9.]+ sec; Warm up time=[0-9]+ msec; SentMessages=([0-9]+); ReceivedMessages=([0-9]+)`)
	spValid        = regexp.MustCompile(`\[Valid Duration\] RunTime=[0-9.]+ sec; SentMessages=([0-9]+); ReceivedMessages=([0-9]+)`)
	spAvgRTT       = regexp.MustCompile(`avg-rtt=([0-9.]+)`)
	spAvgHalf      = regexp.MustCompile(`avg-latency=`)
	spDropped      = regexp.MustCompile(`# dropped messages = ([0-9]+); # duplicated messages = ([0-9]+); # out-of-order messages = ([0-9]+)`)
	spTotalSent    = regexp.MustCompile(`Total of ([0-9]+) messages sent in ([0-9.]+) sec`)
	spMsgRate      = regexp.MustCompile(`Message Rate is ([0-9.]+) \[msg/sec\]`)
	spServerTotal  = regexp.MustCompile(`Total ([0-9]+) messages received and handled`)
	spErrorLine    = regexp.MustCompile(`(?m)^.*ERROR.*$`)
	spPercentileRe = func(q string) *regexp.Regexp {
		return regexp.MustCompile(`percentile ` + regexp.QuoteMeta(q) + ` =\s+([0-9.]+)`)
	}
	spP50, spP99, spP999 = spPercentileRe("50.000"), spPercentileRe("99.000"), spPercentileRe("99.900")
)

// spNoValid is what sockperf says when its valid window (the run less its
// warm-up) held no sample, and it prints no statistics.
const spNoValid = "No valid observations found"

// errSockperfNoValid is that outcome: a real one, which a run on a busy
// machine can have, failed as the trial's with sockperf's words.
var errSockperfNoValid = errors.New("sockperf found no valid observations in its run")

// parseSockperfClient reads the summary of `sockperf ping-pong --full-rtt`
// or `sockperf throughput`. sockperf exits 0 even when it could not
// connect, so a summary line missing is the failure, with sockperf's ERROR
// line when it printed one.
func parseSockperfClient(out, mode string) (sockperfResult, error) {
	sp := &spParser{out: ansiEscape.ReplaceAllString(out, ""), mode: mode}
	var r sockperfResult
	switch mode {
	case "ping-pong":
		if spAvgHalf.MatchString(sp.out) {
			return r, fmt.Errorf("sockperf printed half round trips (avg-latency); ctrbench runs it with --full-rtt")
		}
		r.Sent = uint64(sp.num(spTotalRun, "[Total Run]"))
		r.ValidSent = uint64(sp.num(spValid, "[Valid Duration]"))
		r.Avg = sp.num(spAvgRTT, "avg-rtt")
		r.Dropped = uint64(sp.num(spDropped, "dropped messages"))
		r.P50 = sp.num(spP50, "percentile 50.000")
		r.P99 = sp.num(spP99, "percentile 99.000")
		r.P999 = sp.num(spP999, "percentile 99.900")
		if sp.err == nil && r.ValidSent == 0 {
			sp.err = fmt.Errorf("sockperf ping-pong measured no messages in its valid window; raise duration")
		}
	case "throughput":
		r.Sent = uint64(sp.num(spTotalSent, "Total of … messages sent"))
		r.MsgPerSec = sp.num(spMsgRate, "Message Rate")
		if sp.err == nil && (r.Sent == 0 || r.MsgPerSec <= 0) {
			sp.err = fmt.Errorf("sockperf throughput sent no messages")
		}
	default:
		sp.err = fmt.Errorf("unknown sockperf mode %q", mode)
	}
	return r, sp.err
}

// spParser takes numbers out of sockperf's output and keeps the first
// problem.
type spParser struct {
	out, mode string
	err       error
}

// num returns the first group of re's first match.
func (p *spParser) num(re *regexp.Regexp, what string) float64 {
	if p.err != nil {
		return 0
	}
	m := re.FindStringSubmatch(p.out)
	if m == nil {
		if strings.Contains(p.out, spNoValid) {
			p.err = fmt.Errorf("%w (sockperf: %q): its valid window held no sample — a run too short, or a machine too busy in it; raise duration", errSockperfNoValid, spNoValid)
			return 0
		}
		if e := spErrorLine.FindString(p.out); e != "" {
			p.err = fmt.Errorf("sockperf %s failed: %s", p.mode, strings.TrimSpace(e))
		} else {
			p.err = fmt.Errorf("sockperf %s output has no %s line", p.mode, what)
		}
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		p.err = fmt.Errorf("sockperf %s: %s: %w", p.mode, what, err)
	}
	return v
}

// parseSockperfServer reads the count sockperf's server prints on SIGINT.
func parseSockperfServer(out string) (uint64, error) {
	m := spServerTotal.FindStringSubmatch(ansiEscape.ReplaceAllString(out, ""))
	if m == nil {
		return 0, fmt.Errorf("sockperf server printed no \"Total … messages received\" line when stopped")
	}
	return strconv.ParseUint(m[1], 10, 64)
}
