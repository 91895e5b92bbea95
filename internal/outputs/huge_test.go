package outputs

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

const hugeSize = 10 << 20

// huge is about 10 MB of line, numbered, then end.
func huge(line, end string) []byte {
	var b bytes.Buffer
	b.Grow(hugeSize + len(end) + 64)
	for i := 0; b.Len() < hugeSize; i++ {
		fmt.Fprintf(&b, line, i)
	}
	b.WriteString(end)
	return b.Bytes()
}

// measure runs f and returns how many bytes it allocated, and the most
// heap above what was in use before that a sampler saw while it ran, the
// collector running often (GOGC=10) so that garbage does not count much.
func measure(f func()) (alloc, peak uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, total := ms.HeapAlloc, ms.TotalAlloc
	done, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var most uint64
		for {
			select {
			case <-done:
				sampled <- most
				return
			case <-tick.C:
				var s runtime.MemStats
				runtime.ReadMemStats(&s)
				most = max(most, s.HeapAlloc)
			}
		}
	}()
	f()
	close(done)
	most := <-sampled
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc - total, max(most, ms.HeapAlloc, base) - base
}

// hugeCase is a 10 MB output of a format, what must be read from it, and
// the memory reading it may take: what it allocates, in outputs (0: under
// 1 MiB), and the most heap it holds, in halves of the output.
type hugeCase struct {
	name     string
	c        Contract
	out      func() []byte
	want     func(out []byte) float64
	maxAlloc int
	maxPeak  int
}

// hugeCases: a 10 MB output is read one line or record at a time where
// the format allows it: the heap Parse holds stays well below the
// output's size (json aside: a JSON object is decoded whole). What it
// allocates says that regex and benchfmt never copy the output, that csv
// makes each record's strings once, and that jsonl's objects, line by
// line, are garbage.
func hugeCases() []hugeCase {
	log := "2024-11-22T16:00:00Z INFO served request %d in 1.2ms from 10.0.0.7\n"
	return []hugeCase{
		{"regex", in(Regex, m("rps", `^Requests/sec:\s+(?P<value>[0-9.]+)`, "")),
			func() []byte { return huge(log, "Requests/sec:  12269.13\n") }, func([]byte) float64 { return 12269.13 }, 0, 1},
		// The exception: regexp lists every match before they are read
		// (it has no iterator), about a hundred bytes a match, so a
		// match on every line of 70 bytes holds more than the output.
		{"regex, a match per line", in(Regex, m("n", `request (?P<value>\d+) in`, Count)),
			func() []byte { return huge(log, "") }, lines, 3, 4},
		{"benchfmt", in(Benchfmt, m("enc", "Encode ns/op", "")),
			func() []byte {
				return huge("=== RUN   TestCodec/%d\n", "BenchmarkEncode-8  1000000  1052 ns/op\nPASS\n")
			},
			func([]byte) float64 { return 1052 }, 0, 1},
		{"csv", in(CSV, m("rps", "SET,2", Count)),
			func() []byte { return huge("\"SET\",\"%d\",\"0.287\",\"0.064\"\n", "") }, lines, 2, 1},
		{"jsonl", in(JSONL, m("ops", "ops", Sum)),
			func() []byte { return huge("{\"t\": %d, \"ops\": 1, \"lat_ms\": {\"p50\": 1.1, \"p99\": 3.1}}\n", "") },
			lines, 50, 1},
		{"json", in(JSON, m("ops", "result.ops", "")),
			func() []byte { return append([]byte(`{"result": {"ops": 42}, "log": [0`), huge(", %d", "]}")...) },
			func([]byte) float64 { return 42 }, 50, 50},
	}
}

// TestHugeOutput: each format's 10 MB output gives the right value. What
// reading it costs in memory is BenchmarkHugeOutput's (make bench): a
// bound on the heap, sampled while the collector runs on a busy machine,
// is a target, not a unit test's assertion.
func TestHugeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 10 MB outputs")
	}
	for _, tc := range hugeCases() {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out()
			got, err := tc.c.Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(out); got[0].Value != want {
				t.Errorf("got %v, want %v", got[0].Value, want)
			}
		})
	}
}

// BenchmarkHugeOutput reads each format's 10 MB output and reports what
// it allocated and the most heap it held, per byte of output, failing
// when either is above the case's target. make bench runs it.
func BenchmarkHugeOutput(b *testing.B) {
	for _, tc := range hugeCases() {
		b.Run(tc.name, func(b *testing.B) {
			out := tc.out()
			var alloc, peak uint64
			for range b.N {
				a, p := measure(func() {
					if _, err := tc.c.Parse(out); err != nil {
						b.Fatal(err)
					}
				})
				alloc, peak = max(alloc, a), max(peak, p)
			}
			b.ReportMetric(float64(alloc)/float64(len(out)), "alloc/out-byte")
			b.ReportMetric(float64(peak)/float64(len(out)), "peak/out-byte")
			if limit := uint64(max(tc.maxAlloc*len(out), 1<<20)); alloc > limit {
				b.Errorf("reading %d bytes allocated %d, more than the target %d", len(out), alloc, limit)
			}
			if limit := uint64(tc.maxPeak * len(out) / 2); peak > limit {
				b.Errorf("reading %d bytes held %d, more than the target %d", len(out), peak, limit)
			}
		})
	}
}

// lines is how many lines out has.
func lines(out []byte) float64 { return float64(bytes.Count(out, []byte("\n"))) }

// The tail of a huge output, missing its metric, is at most TailLines
// lines and TailBytes bytes, and says so.
func TestHugeOutputTail(t *testing.T) {
	out := huge("2024-11-22T16:00:00Z INFO served request %d in 1.2ms from 10.0.0.7\n", "panic: connection reset\n")
	_, err := in(Regex, m("rps", `^Requests/sec:\s+(?P<value>[0-9.]+)`, "")).Parse(out)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	head, tail, ok := strings.Cut(msg, "the output's last 20 lines, of "+fmt.Sprint(len(out))+" bytes (a tail is at most 20 lines and 2048 bytes):\n")
	if !ok || !strings.Contains(head, `metric "rps": missing`) {
		t.Fatalf("got %s", msg)
	}
	if lines := strings.Split(tail, "\n"); len(lines) != 20 || len(tail) > TailBytes+20*len("  | ") || lines[19] != "  | panic: connection reset" {
		t.Fatalf("the tail is %d bytes, %d lines:\n%s", len(tail), len(lines), tail)
	}
}
