// Package platformtest is the conformance suite every platform must pass:
// the contract the orchestrator relies on, checked against the real thing.
package platformtest

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Options say what of the platform to exercise.
type Options struct {
	Networks []vocab.Network // network modes to exercise (of Capabilities.Networks)
	Limits   bool            // whether cgroup limits must be applied and read back
	// Storages maps each storage level the platform supports to the
	// filesystem type the agent must see in its data directory ("" = any).
	Storages map[vocab.Storage]string
	// Caps are the platform's declared capabilities: the phases it says it
	// times must be timed.
	Caps platform.Capabilities
	// Options are the levels of the platform's own factors every
	// instance is started with (InstanceSpec.Options).
	Options map[string]string
}

// Run runs the suite against p, already Prepared for campaign with the
// given networks.
func Run(t *testing.T, campaign string, p platform.Platform, o Options) {
	s := &suite{p: p, o: o, campaign: campaign,
		labels: map[string]string{platform.LabelManaged: "true", platform.LabelCampaign: campaign}}
	type check struct {
		name string
		run  func(*testing.T, vocab.Network)
	}
	// What a network changes — where the agent runs and how a client
	// reaches its server — is checked on every network; what it does not
	// (an agent's exit, its removal, a loop's end) on the first.
	for i, network := range o.Networks {
		checks := []check{{"main", s.main}, {"client-server", s.clientServer}}
		if i == 0 {
			checks = append(checks, check{"failed-workload-is-a-result", s.failedWorkload}, check{"exit-code-and-stderr", s.exitCode},
				check{"remove-stops-a-running-agent", s.removeStops}, check{"stop-ends-a-loop", s.stopEndsLoop}, check{"go-signal", s.goSignal})
			if o.Caps.Pods {
				checks = append(checks, check{"agents-beside", s.beside})
			}
		}
		for _, c := range checks {
			t.Run(c.name+"/"+string(network), func(t *testing.T) { c.run(t, network) })
		}
	}
	for storage, fstype := range o.Storages {
		t.Run("storage/"+string(storage), func(t *testing.T) { s.storage(t, storage, fstype) })
	}
	if o.Limits {
		t.Run("limits-are-applied", s.limits)
	}
}

// suite is one run of the conformance suite: the platform, what to
// exercise, and the instances' names and labels.
type suite struct {
	p        platform.Platform
	o        Options
	campaign string
	labels   map[string]string
	n        int
	// key signs the agents' events: a platform must hand each agent its
	// invocation's environment (invocation.Agent.Env), or every event
	// reads as forged and the suite fails.
	key string
}

// spec is a new instance of the suite on network running inv.
func (s *suite) spec(network vocab.Network, inv invocation.Agent) platform.InstanceSpec {
	s.n++
	if s.key == "" {
		s.key = result.NewKey()
	}
	inv.Key = s.key
	// On a platform that brings its nodes, the suite's instances share
	// node 1: a client on the host network reaches its server over
	// loopback there.
	sp := platform.InstanceSpec{Name: s.campaign + "-i" + strconv.Itoa(s.n), Agent: inv, Network: network, Labels: s.labels, Options: s.o.Options}
	if _, ok := platform.ClusterOf(s.o.Caps); ok {
		sp.Host = 1
	}
	return sp
}

func runAgent(workload, params string) invocation.Agent {
	return invocation.Agent{Kind: invocation.Run, Workload: workload, Params: params}
}

// main: a workload's result is read, the agent exits 0, the phases the
// platform declares are timed up to its removal.
func (s *suite) main(t *testing.T, network vocab.Network) {
	in := start(t, s.p, s.spec(network, runAgent("cpu.primes", `{"duration":"200ms","max_prime":"2000"}`)))
	res := ReadResult(t, in, s.key)
	if res.Status != result.OK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	if len(res.Observations) == 0 || res.Observations[0].Value <= 0 {
		t.Fatalf("want a positive events_per_sec, got %+v", res.Observations)
	}
	ex := wait(t, in)
	if ex.Code != 0 {
		t.Fatalf("exit code %d, stderr %q", ex.Code, ex.Stderr)
	}
	checkTimings(t, in, s.o.Caps, vocab.Exit)
	if err := remove(t, in); err != nil {
		t.Fatal(err)
	}
	checkTimings(t, in, s.o.Caps, vocab.Remove)
}

// failedWorkload: a workload that fails is a failed result with its reason.
func (s *suite) failedWorkload(t *testing.T, network vocab.Network) {
	in := start(t, s.p, s.spec(network, runAgent("no.such", `{}`)))
	res := ReadResult(t, in, s.key)
	if res.Status != result.Failed || res.Error == "" {
		t.Fatalf("want a failed result with a reason, got %+v", res)
	}
}

// exitCode: an agent that cannot start exits non-zero, saying why.
func (s *suite) exitCode(t *testing.T, network vocab.Network) {
	in := start(t, s.p, s.spec(network, runAgent("", ""))) // --workload is required
	drain(t, in)
	ex := wait(t, in)
	if ex.Code == 0 {
		t.Fatalf("want a non-zero exit code")
	}
	if ex.Stderr == "" {
		t.Fatalf("want the error on stderr")
	}
}

// removeStops: removing a running agent stops it — Remove does not wait
// for the workload's 10 minutes (remove fails the test past removeWithin)
// — and twice is harmless.
func (s *suite) removeStops(t *testing.T, network vocab.Network) {
	in := start(t, s.p, s.spec(network, runAgent("cpu.primes", `{"duration":"10m"}`)))
	time.Sleep(300 * time.Millisecond)
	if err := remove(t, in); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := remove(t, in); err != nil {
		t.Fatalf("second remove must be harmless: %v", err)
	}
}

// stopEndsLoop: Stop ends a neighbour's loop, which reports its iterations.
func (s *suite) stopEndsLoop(t *testing.T, network vocab.Network) {
	in := start(t, s.p, s.spec(network, invocation.Agent{Kind: invocation.Loop, Workload: "cpu.primes", Params: `{"duration":"50ms","max_prime":"1000"}`}))
	sc := bufio.NewScanner(in.Stdout())
	ready := false
	for !ready && sc.Scan() {
		ev, ok := s.event(sc.Bytes())
		ready = ok && ev.Event == "ready"
	}
	if !ready {
		t.Fatal("loop never announced readiness")
	}
	checkWireable(t, in, s.o.Caps) // it runs until Stop
	time.Sleep(300 * time.Millisecond)
	if err := in.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	var res *result.Result
	for sc.Scan() {
		if ev, ok := s.event(sc.Bytes()); ok && ev.Event == "result" {
			res = ev.Result
		}
	}
	if res == nil || len(res.Neighbours) != 1 || res.Neighbours[0].Iterations < 2 {
		t.Fatalf("after Stop, want the loop's result with its iterations, got %+v", res)
	}
	if ex := wait(t, in); ex.Code != 0 {
		t.Errorf("exit %d after SIGTERM: %s", ex.Code, ex.Stderr)
	}
}

// awaitReady reads sc until the agent announces it is ready.
func (s *suite) awaitReady(t *testing.T, sc *bufio.Scanner, what string) {
	t.Helper()
	within(t, resultWithin, what+" announcing it is ready", func() {
		for sc.Scan() {
			if ev, ok := s.event(sc.Bytes()); ok && ev.Event == "ready" {
				return
			}
		}
		t.Errorf("%s ended without announcing it is ready", what)
	})
}

// resultOf reads sc to its end and gives the last result event.
func (s *suite) resultOf(sc *bufio.Scanner) *result.Result {
	var res *result.Result
	for sc.Scan() {
		if ev, ok := s.event(sc.Bytes()); ok && ev.Event == "result" {
			res = ev.Result
		}
	}
	return res
}

// goSignal: an agent started with WaitGo announces it is ready and waits
// — it is still there well after its 200 ms run would have ended — and
// the go signal (platform.Goer) starts its run. A platform whose
// instances take no go signal cannot run pairs or instances at once: it
// fails here.
func (s *suite) goSignal(t *testing.T, network vocab.Network) {
	inv := runAgent("cpu.primes", `{"duration":"200ms","max_prime":"2000"}`)
	inv.WaitGo = true
	in := start(t, s.p, s.spec(network, inv))
	g, ok := in.(platform.Goer)
	if !ok {
		t.Fatalf("%T takes no go signal (platform.Goer)", in)
	}
	sc := bufio.NewScanner(in.Stdout())
	s.awaitReady(t, sc, "an agent waiting for the go signal")
	wctx, cancel := context.WithTimeout(context.Background(), time.Second)
	ex, err := in.Wait(wctx)
	cancel()
	if err == nil {
		t.Fatalf("the agent ended (exit %d, %q) before the go signal: it did not wait", ex.Code, ex.Stderr)
	}
	if err := g.Go(context.Background()); err != nil {
		t.Fatalf("go: %v", err)
	}
	res := s.resultOf(sc)
	if res == nil || res.Status != result.OK {
		t.Fatalf("after the go signal, want an ok result, got %+v", res)
	}
}

// beside: agents in containers beside an instance's own, in its pod
// (Capabilities.Pods): each is an instance of its own — its output, its
// Stop for its agent alone — while the instance's agent runs and ends;
// removing the pod's instance removes them.
func (s *suite) beside(t *testing.T, network vocab.Network) {
	inv := runAgent("cpu.primes", `{"duration":"200ms","max_prime":"2000"}`)
	inv.WaitGo = true
	sp := s.spec(network, inv)
	loop := invocation.Agent{Kind: invocation.Loop, Workload: "cpu.primes", Params: `{"duration":"50ms","max_prime":"1000"}`, Key: s.key}
	sp.Beside = []platform.Container{{Name: "neighbour1", Agent: loop}, {Name: "neighbour2", Agent: loop, Limits: platform.Limits{CPUs: 0.5, MemoryBytes: 64 << 20}}}
	in := start(t, s.p, sp)
	pod, ok := in.(platform.Pod)
	if !ok || len(pod.Beside()) != 2 {
		t.Fatalf("%T gives no agents beside it (platform.Pod)", in)
	}
	var scs []*bufio.Scanner
	for i, b := range pod.Beside() {
		sc := bufio.NewScanner(b.Stdout())
		s.awaitReady(t, sc, sp.Beside[i].Name)
		scs = append(scs, sc)
		if b.IP() != in.IP() {
			t.Errorf("%s's address %q, its pod's %q", sp.Beside[i].Name, b.IP(), in.IP())
		}
	}
	sc := bufio.NewScanner(in.Stdout())
	s.awaitReady(t, sc, "the pod's own agent")
	if err := in.(platform.Goer).Go(context.Background()); err != nil {
		t.Fatalf("go: %v", err)
	}
	if res := s.resultOf(sc); res == nil || res.Status != result.OK {
		t.Fatalf("the pod's own agent: %+v", res)
	}
	for i, b := range pod.Beside() {
		if err := b.Stop(context.Background()); err != nil {
			t.Fatalf("stopping %s: %v", sp.Beside[i].Name, err)
		}
		res := s.resultOf(scs[i])
		if res == nil || len(res.Neighbours) != 1 || res.Neighbours[0].Iterations < 2 {
			t.Fatalf("after Stop, want %s's result with its iterations, got %+v", sp.Beside[i].Name, res)
		}
		if ex := wait(t, b); ex.Code != 0 {
			t.Errorf("%s: exit %d after its stop: %s", sp.Beside[i].Name, ex.Code, ex.Stderr)
		}
	}
	if ex := wait(t, in); ex.Code != 0 {
		t.Errorf("the pod's own agent: exit %d: %s", ex.Code, ex.Stderr)
	}
	if err := remove(t, in); err != nil {
		t.Fatal(err)
	}
}

// clientServer: a client reaches a server across the network.
func (s *suite) clientServer(t *testing.T, network vocab.Network) {
	// Where the instances really are, with the platform's own
	// factors at their defaults (a nested child on "host" is in
	// its parent's namespace, a parent of its own each).
	seen := network
	if s.o.Caps.Own.Seen != nil {
		seen = s.o.Caps.Own.Seen(network, platform.Driver{Caps: s.o.Caps}.Options(nil))
	}
	bind := "127.0.0.1"
	if seen != vocab.Host {
		bind = "0.0.0.0"
	}
	params := `{"duration":"300ms","message_size":"64KiB"}`
	srvInv := runAgent("net.tcp_stream", params)
	srvInv.Role, srvInv.Bind = "server", bind
	srv := start(t, s.p, s.spec(network, srvInv))
	sc := bufio.NewScanner(srv.Stdout())
	var addr string
	for sc.Scan() {
		if ev, ok := s.event(sc.Bytes()); ok && ev.Event == "ready" {
			addr = ev.Addr
			break
		}
	}
	if addr == "" {
		t.Fatalf("server never announced readiness")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("ready address %q: %v", addr, err)
	}
	host := bind
	if seen != vocab.Host {
		host = srv.IP()
		if host == "" {
			t.Fatalf("an instance on network %s must have an IP", network)
		}
	}
	cliInv := runAgent("net.tcp_stream", params)
	cliInv.Role, cliInv.Target = "client", net.JoinHostPort(host, port)
	cli := start(t, s.p, s.spec(network, cliInv))
	res := ReadResult(t, cli, s.key)
	if res.Status != result.OK {
		t.Fatalf("client: %s", res.Error)
	}
	var sres *result.Result
	for sc.Scan() {
		if ev, ok := s.event(sc.Bytes()); ok && ev.Event == "result" {
			sres = ev.Result
		}
	}
	if sres == nil || sres.Status != result.OK {
		t.Fatalf("server result: %+v", sres)
	}
}

// storage: the agent's data directory is on the storage asked for.
func (s *suite) storage(t *testing.T, storage vocab.Storage, fstype string) {
	sp := s.spec(s.o.Networks[0], runAgent("cpu.primes", `{"duration":"50ms","max_prime":"1000"}`))
	sp.Storage = storage
	res := ReadResult(t, start(t, s.p, sp), s.key)
	if res.Status != result.OK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	if res.Seen["data.dir"] == "" || (fstype != "" && res.Seen["data.fstype"] != fstype) {
		t.Errorf("storage %s: data dir %q on %q, want %q", storage, res.Seen["data.dir"], res.Seen["data.fstype"], fstype)
	}
}

// limits: the cgroup limits asked for are read back by the agent.
func (s *suite) limits(t *testing.T) {
	sp := s.spec(s.o.Networks[0], runAgent("cpu.primes", `{"duration":"100ms","max_prime":"1000"}`))
	sp.Limits = platform.Limits{CPUs: 0.5, Cpuset: "0", MemoryBytes: 64 << 20}
	want := map[string]string{"cgroup.cpus": "0.5", "cgroup.cpuset": "0", "cgroup.memory": strconv.Itoa(64 << 20)}
	if _, no := s.o.Caps.NoLimits["cpuset"]; no {
		sp.Limits.Cpuset = "" // a limit the platform says it cannot apply
		delete(want, "cgroup.cpuset")
	}
	res := ReadResult(t, start(t, s.p, sp), s.key)
	if res.Status != result.OK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	for k, v := range want {
		if res.Seen[k] != v {
			t.Errorf("agent saw %s=%q, want %q (all: %v)", k, res.Seen[k], v, res.Seen)
		}
	}
}

// checkTimings checks that every phase the platform declares it times,
// up to last, was timed, in order and after Start was called.
func checkTimings(t *testing.T, in platform.Instance, caps platform.Capabilities, last vocab.Phase) {
	t.Helper()
	tm := in.Timings()
	if tm.Requested.IsZero() {
		t.Fatalf("timings: no request time")
	}
	prev, prevName := tm.Requested, "request"
	for _, ph := range vocab.Phases {
		if !slices.Contains(caps.Phases, ph) {
			continue
		}
		at, ok := tm.At[ph]
		if !ok {
			t.Errorf("timings: the platform declares phase %s but did not time it (%v)", ph, tm.At)
			continue
		}
		if at.Before(prev) {
			t.Errorf("timings: %s at %s is before %s at %s", ph, at.Format(time.RFC3339Nano), prevName, prev.Format(time.RFC3339Nano))
		}
		prev, prevName = at, string(ph)
		if ph == last {
			break
		}
	}
}

// checkWireable: a platform that declares Net.Wireable gives a running
// instance a network namespace the lab can enter by path.
func checkWireable(t *testing.T, in platform.Instance, caps platform.Capabilities) {
	t.Helper()
	if !caps.Net.Wireable {
		return
	}
	ns := in.NetNSPath()
	if ns == "" {
		t.Fatalf("the platform declares Net.Wireable but a running instance gives no network namespace path")
	}
	if _, err := os.Stat(ns); err != nil {
		t.Fatalf("the platform declares Net.Wireable but its running instance's namespace cannot be entered: %v", err)
	}
}

func start(t *testing.T, p platform.Platform, s platform.InstanceSpec) platform.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startWithin)
	defer cancel()
	in, err := p.Start(ctx, s)
	if err != nil {
		t.Fatalf("start %s: %v", s.Name, err)
	}
	t.Cleanup(func() { _ = remove(t, in) })
	return in
}

// Bounds on what must end by itself: a platform call that never returns
// fails its test, saying which, instead of holding the package until its
// timeout (when nothing says where it hung). They are not timings: each is
// many times what it takes on an idle machine (seconds), so that a busy
// one (several engines and emulated machines starting at once on two
// cores) does not fail the suite.
const (
	startWithin  = 3 * time.Minute
	resultWithin = 3 * time.Minute
	waitWithin   = time.Minute
	removeWithin = 2 * time.Minute
	drainWithin  = time.Minute
)

// remove removes in, and fails the test if that does not return within
// removeWithin.
func remove(t *testing.T, in platform.Instance) error {
	t.Helper()
	var err error
	within(t, removeWithin, "Remove", func() { err = in.Remove(context.Background()) })
	return err
}

// within runs f, and fails the test at once if it does not return within
// d (f goes on in the background: a call that hangs cannot be stopped).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// event reads a line of an agent's output: an event signed with the
// suite's key, else none.
func (s *suite) event(line []byte) (result.Event, bool) {
	ev, v := result.ReadEvent(line, s.key)
	return ev, v == result.Valid
}

// ReadResult reads an instance's result event, signed with key, failing t
// when none comes (with the instance's exit code and stderr) or none comes
// within resultWithin.
func ReadResult(t *testing.T, in platform.Instance, key string) *result.Result {
	t.Helper()
	done := make(chan *result.Result, 1)
	go func() {
		sc := bufio.NewScanner(in.Stdout())
		var res *result.Result
		for sc.Scan() {
			if ev, v := result.ReadEvent(sc.Bytes(), key); v == result.Valid && ev.Event == "result" {
				res = ev.Result
			}
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil {
			ex := wait(t, in)
			t.Fatalf("no result event (exit %d, stderr %q)", ex.Code, ex.Stderr)
		}
		return res
	case <-time.After(resultWithin):
		t.Fatalf("no result within %s", resultWithin)
	}
	return nil
}

// drain reads in's output to its end, which must come within
// drainWithin once the agent has ended.
func drain(t *testing.T, in platform.Instance) {
	t.Helper()
	within(t, drainWithin, "reading the output to its end", func() {
		sc := bufio.NewScanner(in.Stdout())
		for sc.Scan() {
		}
	})
}

func wait(t *testing.T, in platform.Instance) platform.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitWithin)
	defer cancel()
	ex, err := in.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return ex
}

// NewCampaign is a fresh campaign ID for a conformance run of a platform
// on a real engine, and the labels its objects carry.
func NewCampaign(prefix string) (string, map[string]string) {
	b := make([]byte, 4)
	_, _ = crand.Read(b)
	id := prefix + "-" + hex.EncodeToString(b)
	return id, map[string]string{platform.LabelManaged: "true", platform.LabelCampaign: id}
}
