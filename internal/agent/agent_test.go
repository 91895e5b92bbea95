package agent

import (
	"bufio"
	"bytes"
	"context"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func runAgent(t *testing.T, o Options) []result.Event {
	t.Helper()
	var out, errb bytes.Buffer
	o.Stdout, o.Stderr = &out, &errb
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var evs []result.Event
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		ev, ok := result.ParseEvent(sc.Bytes())
		if !ok {
			t.Fatalf("stdout line is not an event: %q", sc.Text())
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[len(evs)-1].Event != "result" {
		t.Fatalf("the last event must be the result: %+v", evs)
	}
	return evs
}

func TestAgentResult(t *testing.T) {
	evs := runAgent(t, Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Params: `{"duration":"100ms","max_prime":"1000"}`}})
	res := evs[len(evs)-1].Result
	if res.Status != result.OK || res.Workload != "cpu.primes" || res.Role != "main" {
		t.Fatalf("%+v", res)
	}
	if res.Ended.Before(res.Started) || res.Seen["cgroup.version"] == "" {
		t.Errorf("times or seen missing: %+v", res)
	}
	// The event times come back as the histogram the percentile was read
	// from, through the JSON the agent prints.
	if len(res.Histograms) != 1 || res.Histograms[0].Metric != "latency" || res.Histograms[0].Unit != "ns" {
		t.Fatalf("histograms %+v, want one of latency in ns", res.Histograms)
	}
	h, err := hdr.Decode(res.Histograms[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	p95, _ := hdr.Percentile(h, 95, "ns", "ms")
	for _, ob := range res.Observations {
		if ob.Metric == "latency_p95" && ob.Value != p95 {
			t.Errorf("latency_p95 %v, the returned histogram's p95 %v", ob.Value, p95)
		}
	}
}

// A histogram the workload does not declare, or in another unit, or twice,
// fails the run: the runner would not know which percentiles it holds.
func TestHistogramsMustBeDeclared(t *testing.T) {
	spec := &workload.Spec{Histograms: []workload.Histogram{{Name: "latency", Unit: "ns"}}}
	for name, c := range map[string]struct {
		hs   []result.Histogram
		want string
	}{
		"declared":   {[]result.Histogram{{Metric: "latency", Unit: "ns"}}, ""},
		"undeclared": {[]result.Histogram{{Metric: "fct", Unit: "ns"}}, "histogram of fct in ns, which it does not declare"},
		"other unit": {[]result.Histogram{{Metric: "latency", Unit: "µs"}}, "histogram of latency in µs, which it does not declare"},
		"twice":      {[]result.Histogram{{Metric: "latency", Unit: "ns"}, {Metric: "latency", Unit: "ns"}}, "twice"},
	} {
		var h histograms
		for _, x := range c.hs {
			h.add(x)
		}
		got, err := h.declared(spec)
		switch {
		case c.want == "" && (err != nil || len(got) != len(c.hs)):
			t.Errorf("%s: %v, %v", name, got, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
}

func TestAgentFailuresAreResults(t *testing.T) {
	for name, c := range map[string]struct {
		o    Options
		want string
	}{
		"unknown workload": {Options{Agent: invocation.Agent{Workload: "cpu.nope", Role: "main"}}, "unknown workload type"},
		"unknown role":     {Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "server"}}, "has no role"},
		"bad json":         {Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Params: `{`}}, "not a JSON object"},
		"bad value":        {Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Params: `{"threads":"0"}`}}, "threads"},
		"no server":        {Options{Agent: invocation.Agent{Workload: "net.tcp_stream", Role: "client", Params: `{"duration":"100ms"}`, Target: "127.0.0.1:1"}}, "connecting"},
	} {
		t.Run(name, func(t *testing.T) {
			evs := runAgent(t, c.o)
			res := evs[len(evs)-1].Result
			if res.Status != result.Failed || !strings.Contains(res.Error, c.want) {
				t.Fatalf("want failed with %q, got %+v", c.want, res)
			}
		})
	}
}

func TestServerAnnouncesReadyFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan struct{})
	pr := &notifyWriter{w: &out, onWrite: func() { cancel() }}
	go func() {
		_ = Run(ctx, Options{Agent: invocation.Agent{Workload: "net.tcp_stream", Role: "server", Bind: "127.0.0.1"}, Stdout: pr, Stderr: &bytes.Buffer{}})
		close(done)
	}()
	<-done
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want ready then result, got %q", out.String())
	}
	ready, _ := result.ParseEvent([]byte(lines[0]))
	res, _ := result.ParseEvent([]byte(lines[1]))
	if ready.Event != "ready" || !strings.HasPrefix(ready.Addr, "127.0.0.1:") {
		t.Errorf("first event %+v", ready)
	}
	// Cancelled while waiting for a client: a failed result that says so.
	if res.Event != "result" || res.Result.Status != result.Failed || !strings.Contains(res.Result.Error, "interrupted") {
		t.Errorf("second event %+v", res.Result)
	}
}

// notifyWriter calls onWrite after the first write (the ready event).
type notifyWriter struct {
	w       *bytes.Buffer
	onWrite func()
	n       int
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	n.n++
	k, err := n.w.Write(p)
	if n.n == 1 {
		n.onWrite()
	}
	return k, err
}

func TestNeighboursInTheSameInstance(t *testing.T) {
	evs := runAgent(t, Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Params: `{"duration":"500ms","max_prime":"2000"}`,
		Neighbours: []string{`cpu.primes={"duration":"100ms","max_prime":"2000"}`, "idle"}}})
	res := evs[len(evs)-1].Result
	if res.Status != result.OK {
		t.Fatalf("%+v", res)
	}
	m := map[string]float64{}
	for _, o := range res.Observations {
		m[o.ID().String()] = o.Value
	}
	if m["neighbour.overlap_pct"] < 95 || m["neighbour.iterations"] < 3 {
		t.Errorf("neighbours did not cover the target: %v", m)
	}
	if len(res.Neighbours) != 2 || res.Seen["neighbour.flag"] != "" {
		t.Errorf("neighbours %+v, flag %q", res.Neighbours, res.Seen["neighbour.flag"])
	}
}

func TestNeighbourThatNeverRunsFailsTheTrial(t *testing.T) {
	evs := runAgent(t, Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Params: `{"duration":"300ms"}`,
		Neighbours: []string{`net.tcp_stream={"duration":"100ms","message_size":"0"}`}}})
	res := evs[len(evs)-1].Result
	if res.Status != result.Failed || !strings.Contains(res.Error, "neighbour net.tcp_stream: bad parameters") {
		t.Fatalf("%+v", res)
	}
}

func TestLoopUntilStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	pr := &notifyWriter{w: &out, onWrite: func() {
		// Stop 300 ms after the neighbour is ready.
		go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	}}
	if err := Loop(ctx, Options{Agent: invocation.Agent{Workload: "cpu.primes", Params: `{"duration":"50ms","max_prime":"1000"}`}, Stdout: pr, Stderr: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	ev, _ := result.ParseEvent([]byte(lines[len(lines)-1]))
	if ev.Result == nil || len(ev.Result.Neighbours) != 1 || ev.Result.Neighbours[0].Iterations < 3 {
		t.Fatalf("%s", out.String())
	}
}

// The result's window is the measured run: with the go signal, it begins
// when the signal came, not when the agent started (pairs combine their
// rates over these windows and check how much they overlap).
func TestWindowIsTheMeasuredRun(t *testing.T) {
	before := time.Now()
	const wait = 300 * time.Millisecond
	go func() {
		time.Sleep(wait)
		_ = syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	}()
	evs := runAgent(t, Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", WaitGo: true, Params: `{"duration":"100ms","max_prime":"1000"}`}})
	res := evs[len(evs)-1].Result
	if res.Status != result.OK {
		t.Fatalf("%+v", res)
	}
	if got := res.Started.Sub(before); got < wait {
		t.Errorf("window starts %v after the agent, before the go signal (%v)", got, wait)
	}
	// At least the run; the upper bound only says the window is the run
	// and not the agent's life (loose: a busy machine stretches a run).
	if d := res.Ended.Sub(res.Started); d < 100*time.Millisecond || d > 10*time.Second {
		t.Errorf("window %v, want the 100ms run", d)
	}
}

// Lingering, the agent prints its result and then waits to be stopped, so
// the platform can end its instances one at a time.
func TestLingerWaitsForStop(t *testing.T) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Linger: true, Params: `{"duration":"50ms","max_prime":"100"}`}, Stdout: pw, Stderr: io.Discard})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if ev, ok := result.ParseEvent(sc.Bytes()); ok && ev.Event == "result" {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case <-done:
		t.Fatal("a lingering agent exited after its result without being stopped")
	case <-time.After(300 * time.Millisecond):
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a lingering agent did not end on SIGTERM")
	}
}
