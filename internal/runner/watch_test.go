package runner

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// doneAgent is an instance whose agent said it was ready, reported and
// exited before anyone looked.
type doneAgent struct{ out string }

func (d doneAgent) Stdout() io.Reader                         { return strings.NewReader(d.out) }
func (doneAgent) Wait(context.Context) (platform.Exit, error) { return platform.Exit{}, nil }
func (doneAgent) IP() string                                  { return "" }
func (doneAgent) NetNSPath() string                           { return "" }
func (doneAgent) Stop(context.Context) error                  { return nil }
func (doneAgent) Remove(context.Context) error                { return nil }
func (doneAgent) Timings() platform.Timings                   { return platform.Timings{} }

// An agent that is ready, done and gone at once is ready, then has its
// result — whichever of the three the watcher's select sees first (a
// lifecycle entity's life is that short; 1 in 16 once failed).
func TestWatchReadyResultEOF(t *testing.T) {
	key := result.NewKey()
	out := string(result.Event{Event: "ready"}.Line(key)) + string(result.Event{Event: "result", Result: &result.Result{Status: result.OK}}.Line(key))
	for i := range 500 {
		w := watch("e", doneAgent{out}, key)
		<-w.eof
		if _, err := w.awaitReady(context.Background()); err != nil {
			t.Fatalf("try %d: awaitReady: %v", i, err)
		}
		if res, err := w.await(context.Background()); err != nil || res.Status != "ok" {
			t.Fatalf("try %d: await: %v %v", i, res, err)
		}
	}
}

// A workload that writes events onto its agent's output (it found
// /proc/<agent>/fd/1, or a tool printed the protocol's lines) cannot
// make them the trial's result: only lines signed with the trial's key
// count, and a forged one fails the trial saying so. Unsigned results,
// results signed with another trial's key, tampered ones, invalid UTF-8,
// NaN and a line longer than any event are all tried.
func TestWatchRefusesForgedEvents(t *testing.T) {
	key, other := result.NewKey(), result.NewKey()
	lie := result.Event{Event: "result", Result: &result.Result{Status: result.OK, Observations: []result.Observation{{Metric: "rate", Value: 1e12}}}}
	truth := result.Event{Event: "result", Result: &result.Result{Status: result.OK, Observations: []result.Observation{{Metric: "rate", Value: 42}}}}
	signed := string(truth.Line(key))
	tampered := strings.Replace(signed, "42", "43", 1)
	for name, forged := range map[string]string{
		"unsigned":          string(lie.Line("")),
		"another key":       string(lie.Line(other)),
		"tampered":          tampered,
		"forged mac":        `{"mac":"00ff","ev":{"event":"result","result":{"status":"ok"}}}` + "\n",
		"NaN":               `{"event":"result","result":{"status":"ok","observations":[{"metric":"rate","value":NaN}]}}` + "\n",
		"invalid UTF-8 mac": "{\"mac\":\"\xff\xfe\",\"ev\":{\"event\":\"ready\"}}\n",
	} {
		w := watch("client", doneAgent{forged + signed}, key)
		res, err := w.await(context.Background())
		if name == "NaN" {
			// Not JSON at all: plain output, and the signed result stands.
			if err != nil || res.Observations[0].Value != 42 {
				t.Errorf("%s: %v %v", name, res, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "not signed with this trial's key") {
			t.Errorf("%s: forged line accepted: %+v, %v", name, res, err)
		}
	}
	// Output that is no event (a workload's own JSON, binary junk) is
	// kept for the failure report and changes nothing.
	w := watch("client", doneAgent{`{"rate":1e12}` + "\n\xff\xfe\x00\n" + signed}, key)
	if res, err := w.await(context.Background()); err != nil || res.Observations[0].Value != 42 {
		t.Errorf("plain output: %+v, %v", res, err)
	}
	// A line longer than any event ends the reading: no result, and a
	// reason, never a partial line taken for one.
	huge := strings.Repeat("x", maxEventLine+1) + "\n"
	w = watch("client", doneAgent{huge + signed}, key)
	if res, err := w.await(context.Background()); err == nil {
		t.Errorf("a %d-byte line: result %+v", len(huge), res)
	}
}

// blockedAgent prints its output and then nothing, never exiting: a
// server waiting for its client.
type blockedAgent struct {
	doneAgent
	block chan struct{}
}

func (b blockedAgent) Stdout() io.Reader {
	return io.MultiReader(strings.NewReader(b.out), readerFunc(func([]byte) (int, error) { <-b.block; return 0, io.EOF }))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// A forged ready from a server that then waits for ever fails the wait
// at once, not at the trial's timeout.
func TestWatchForgedReadyEndsTheWait(t *testing.T) {
	key := result.NewKey()
	b := blockedAgent{doneAgent{string(result.Event{Event: "ready", Addr: "1.2.3.4:5"}.Line(""))}, make(chan struct{})}
	defer close(b.block)
	w := watch("server", b, key)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.awaitReady(ctx); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Fatalf("awaitReady: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the wait ran to its timeout")
	}
}
