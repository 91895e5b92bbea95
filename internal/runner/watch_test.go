package runner

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// doneAgent is an instance whose agent said it was ready, reported and
// exited before anyone looked.
type doneAgent struct{ out string }

func (d doneAgent) Stdout() io.Reader                         { return strings.NewReader(d.out) }
func (doneAgent) Wait(context.Context) (platform.Exit, error) { return platform.Exit{}, nil }
func (doneAgent) IP() string                                  { return "" }
func (doneAgent) Stop(context.Context) error                  { return nil }
func (doneAgent) Remove(context.Context) error                { return nil }
func (doneAgent) Timings() platform.Timings                   { return platform.Timings{} }

// An agent that is ready, done and gone at once is ready, then has its
// result — whichever of the three the watcher's select sees first (a
// lifecycle entity's life is that short; 1 in 16 once failed).
func TestWatchReadyResultEOF(t *testing.T) {
	out := `{"event":"ready"}` + "\n" + `{"event":"result","result":{"status":"ok"}}` + "\n"
	for i := range 500 {
		w := watch("e", doneAgent{out})
		<-w.eof
		if _, err := w.awaitReady(context.Background()); err != nil {
			t.Fatalf("try %d: awaitReady: %v", i, err)
		}
		if res, err := w.await(context.Background()); err != nil || res.Status != "ok" {
			t.Fatalf("try %d: await: %v %v", i, res, err)
		}
	}
}
