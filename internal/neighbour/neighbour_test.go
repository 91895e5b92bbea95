package neighbour

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	"github.com/ctrbench/ctrbench/internal/workload"
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

func TestOverlap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, c := range []struct {
		ws   []Window
		want float64
	}{
		{nil, 0},
		{[]Window{{Start: at(-1), End: at(11)}}, 1},
		{[]Window{{Start: at(0), End: at(4)}, {Start: at(5), End: at(10)}}, 0.9},                             // a 1 s gap between iterations
		{[]Window{{Start: at(5), End: at(10)}, {Start: at(0), End: at(4)}, {Start: at(2), End: at(3)}}, 0.9}, // unsorted, nested
		{[]Window{{Start: at(-5), End: at(-1)}, {Start: at(12), End: at(13)}}, 0},                            // entirely outside
	} {
		if got := Overlap(at(0), at(10), c.ws); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Overlap(%v) = %v, want %v", c.ws, got, c.want)
		}
	}
}

func resolve(t *testing.T, typ string, user map[string]string) Spec {
	t.Helper()
	s, _ := workload.Lookup(typ)
	v, errs := s.Resolve(user)
	if errs != nil {
		t.Fatal(errs)
	}
	return Spec{Type: typ, Params: v}
}

// Neighbours loop until stopped, single- and multi-role alike, and cover
// the time between Start and Stop.
func TestNeighboursLoopAndCover(t *testing.T) {
	specs := []Spec{
		resolve(t, "cpu.primes", map[string]string{"duration": "100ms", "max_prime": "2000"}),
		resolve(t, "disk.fio", map[string]string{"size": "4MiB", "runtime": "100ms"}),
		resolve(t, "net.tcp_stream", map[string]string{"duration": "100ms"}),
		{Type: Idle},
	}
	dataDir := t.TempDir()
	r, err := Start(context.Background(), specs, dataDir, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	time.Sleep(1500 * time.Millisecond) // room for 3 iterations even on a loaded machine
	to := time.Now()
	reps := r.Stop()
	// Nothing a neighbour started outlives Stop (fio's forked jobs once did).
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), dataDir) {
			t.Errorf("process left running after Stop: %s", strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	for _, rep := range reps {
		if rep.Failures > 0 {
			t.Errorf("%s failed: %s", rep.Type, rep.LastError)
		}
		// fio lays out its file and probes O_DIRECT first: one (cut short)
		// iteration may be all the window allows it.
		if rep.Type != Idle && rep.Type != "disk.fio" && rep.Iterations < 3 {
			t.Errorf("%s ran %d iterations in 1.5 s of 0.1 s each", rep.Type, rep.Iterations)
		}
		if rep.Iterations < 1 {
			t.Errorf("%s never ran", rep.Type)
		}
		if o := Overlap(from, to, rep.Windows); o < 0.9 {
			t.Errorf("%s covered %.0f%% of the window", rep.Type, 100*o)
		}
	}
}

// TestEndsLoopApart: a client/server neighbour split into its two ends —
// the server listening on one port every iteration, the client reaching
// it — loops as the whole does: the server's first iteration has begun
// once it listens, so the client never starts before it, and both ends
// iterate without a failure (a client between two of the server's
// iterations finds no one listening for a moment, and tries again within
// its iteration).
func TestEndsLoopApart(t *testing.T) {
	p := map[string]string{"duration": "100ms"}
	srv := resolve(t, "net.tcp_stream", p)
	srv.End = &End{Role: "server", Bind: "127.0.0.1", Port: 15211}
	cli := resolve(t, "net.tcp_stream", p)
	cli.End = &End{Role: "client", Target: "127.0.0.1:15211"}
	rs, err := Start(context.Background(), []Spec{srv}, t.TempDir(), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Start(context.Background(), []Spec{cli}, t.TempDir(), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	c, s := rc.Stop()[0], rs.Stop()[0]
	for _, rep := range []Report{s, c} {
		if rep.Iterations < 3 || rep.Failures > 0 {
			t.Errorf("%s end: %d iterations, %d failures (%s)", rep.Type, rep.Iterations, rep.Failures, rep.LastError)
		}
	}
	bad := srv
	bad.End = &End{Role: "pong"}
	rb, err := Start(context.Background(), []Spec{bad}, t.TempDir(), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	// (An iteration Stop cuts short counts, whatever it was doing.)
	if rep := rb.Stop()[0]; rep.Failures == 0 || !strings.Contains(rep.LastError, `no role "pong"`) {
		t.Errorf("an unknown role: %+v", rep)
	}
}
