package workloads

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// cpu.scaling is S3's multi-core efficiency: the same work — π's
// hexadecimal digits, extracted chunk by chunk with the BBP formula —
// done by one thread, then by all, each for the same time; the scores are
// chunks per second, the efficiency their ratio over the ideal.
//
// A chunk is pure integer arithmetic in registers (modular powers, a
// 128-by-64-bit division per term), so the threads share nothing but a
// counter they take chunk numbers from, once a chunk (milliseconds): what
// keeps them from scaling is the platform — CPUs, quota, scheduler,
// frequency — not memory or locks.
const (
	// scalingWindow is how many chunks every phase cycles through:
	// positions base, base+8, … base+8·63, in bit-reversed order so that
	// any run of consecutive chunks costs about the window's mean (a
	// chunk's cost grows with its position).
	scalingWindow = 64
	// scalingStride is the hex digits between chunks: each chunk stands
	// for the 8 digits after its position.
	scalingStride = 8
	// scalingMaxPosition bounds position: the reference (Chudnovsky's
	// series to position + 512 hex digits) takes 0.5 s there, and the
	// terms' moduli stay far below 2³², which pow16mod needs.
	scalingMaxPosition = 1 << 17
)

// scalingMean: each copy's score, averaged over the pairs or instances of
// a trial. Not a rate over their span: a copy's two phases need not line
// up with another's, so a sum would add one copy's single-thread score to
// another's all-thread one.
var scalingMean = workload.Combine{How: workload.CombineMean}

var scalingMetrics = []workload.Metric{
	{Name: "efficiency_pct", Unit: "%", Better: result.Higher, Doc: "multi-core efficiency: speedup ÷ threads × 100 (100 = ideal scaling; y-cruncher's figure, S3 Table 3)", Combine: scalingMean},
	{Name: "single_score", Unit: "chunks/s", Better: result.Higher, Doc: "chunks per second with one thread", Combine: scalingMean},
	{Name: "multi_score", Unit: "chunks/s", Better: result.Higher, Doc: "chunks per second with all threads: the sum of each thread's chunks over its own time", Combine: scalingMean},
	{Name: "speedup", Unit: "ratio", Better: result.Higher, Doc: "multi_score ÷ single_score", Combine: scalingMean},
	{Name: "threads", Unit: "threads", Better: result.Higher, Doc: "threads of the all-thread phase (what threads: 0 resolved to); a record, not a score", Combine: scalingMean},
	{Name: "single_cpu_pct", Unit: "%", Better: result.Higher, Doc: "CPU time the one thread was given ÷ its time: below 100, it waited for a CPU", Combine: scalingMean},
	{Name: "multi_cpu_pct", Unit: "%", Better: result.Higher, Doc: "CPU time the threads were given ÷ (threads × their time): below 100, they waited for CPUs (other load, a quota, fewer CPUs than threads); near 100 with a low efficiency, the CPUs ran slower together", Combine: scalingMean},
}

func init() {
	workload.Register(&workload.Spec{
		Type:    "cpu.scaling",
		Summary: "multi-core efficiency: π's hex digits by BBP digit extraction with one thread, then all, every chunk checked (S3's y-cruncher and Geekbench single/multi-core)",
		Params: []workload.Param{
			workload.P("position", workload.Int, "16384", "hexadecimal digit of π where the chunks start; a chunk's cost grows as position·log(position) (16384: about 5 ms)").Range(1024, scalingMaxPosition),
			workload.P("threads", workload.Int, "0", "threads of the all-thread phase; 0 = "+instanceCPUsDoc).Range(0, 1024),
			workload.P("duration", workload.Duration, "2s", "time of each phase, one thread then all: a trial takes about twice this").Range(0.1, 3600),
		},
		Metrics: scalingMetrics,
		Run:     map[string]workload.RunFunc{workload.Main: runScaling},
		Smoke:   map[string]string{"duration": "300ms", "position": "4096"},
	})
}

func runScaling(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	chunks := newPiChunks(uint64(p.Int("position"))) // untimed: the reference
	ncpu, quota := cpusNow()
	threads := scalingThreads(int(p.Int("threads")), ncpu, quota)
	seen := threadsSeen(threads, p.String("threads"), ncpu, quota)
	if env.See != nil {
		env.See("cpu.scaling.threads", seen)
	}
	diskLog(env, "cpu.scaling: threads %s", seen)
	// GOMAXPROCS may be below threads — the runtime sizes it by the
	// quota too (rounded up, at least 2), and threads may exceed the
	// CPUs: raise it for the trial, so that every thread can run at once.
	if procs := runtime.GOMAXPROCS(0); procs < threads {
		runtime.GOMAXPROCS(threads)
		defer runtime.GOMAXPROCS(procs)
	}
	dur := p.Duration("duration")
	single, err := scalingPhase(ctx, chunks, 1, dur)
	if err != nil {
		return nil, single.describe(), err
	}
	multi, err := scalingPhase(ctx, chunks, threads, dur)
	raw := single.describe() + multi.describe()
	if err != nil {
		return nil, raw, err
	}
	obs := scalingObservations(single.rate, multi.rate, threads)
	return append(obs, cpuShareObservations(single, multi)...), raw, nil
}

// cpuShareObservations are the phases' CPU shares, when the threads'
// CPU time could be read.
func cpuShareObservations(single, multi scalingRun) []result.Observation {
	var obs []result.Observation
	for i, r := range []scalingRun{single, multi} {
		if share, ok := r.cpuShare(); ok {
			name := [...]string{"single_cpu_pct", "multi_cpu_pct"}[i]
			obs = append(obs, result.Observation{Metric: name, Value: 100 * share, Unit: "%", Better: result.Higher})
		}
	}
	return obs
}

// scalingThreads is the thread count of the all-thread phase: the one
// asked for, or every CPU the instance may use (instanceCPUs).
func scalingThreads(asked, ncpu int, quota float64) int {
	if asked > 0 {
		return asked
	}
	return instanceCPUs(ncpu, quota)
}

// scalingObservations are the metrics of a trial whose one-thread phase
// did single chunks/s and whose all-thread phase, threads threads, multi.
func scalingObservations(single, multi float64, threads int) []result.Observation {
	speedup := multi / single
	vals := map[string]float64{ // the CPU shares: cpuShareObservations
		"efficiency_pct": 100 * speedup / float64(threads),
		"single_score":   single,
		"multi_score":    multi,
		"speedup":        speedup,
		"threads":        float64(threads),
	}
	var obs []result.Observation
	for _, m := range scalingMetrics {
		if v, ok := vals[m.Name]; ok {
			obs = append(obs, result.Observation{Metric: m.Name, Value: v, Unit: m.Unit, Better: m.Better})
		}
	}
	return obs
}

// scalingWorker is one thread's tally, padded so that no two threads
// write one cache line.
type scalingWorker struct {
	chunks int64
	span   time.Duration // from the phase's start to the end of its last chunk
	cpu    time.Duration // CPU time of its OS thread over the same, −1 when unreadable
	err    error
	_      [64]byte
}

// scalingRun is one phase.
type scalingRun struct {
	workers []scalingWorker
	dur     time.Duration
	rate    float64 // Σ chunks ÷ span over the workers
}

// cpuShare is the CPU time the phase's threads were given over their
// spans: 1 when each ran all the time.
func (r scalingRun) cpuShare() (float64, bool) {
	var cpu, span time.Duration
	for _, w := range r.workers {
		if w.cpu < 0 {
			return 0, false
		}
		cpu += w.cpu
		span += w.span
	}
	return cpu.Seconds() / span.Seconds(), span > 0
}

func (r scalingRun) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d thread(s) for %s: %.2f chunks/s;", len(r.workers), r.dur, r.rate)
	for i, w := range r.workers {
		fmt.Fprintf(&b, " thread %d %d chunks in %.3f s (CPU %.3f s)", i+1, w.chunks, w.span.Seconds(), w.cpu.Seconds())
		if i < len(r.workers)-1 {
			b.WriteByte(',')
		}
	}
	return b.String() + "\n"
}

// scalingPhase runs threads threads, each locked to an OS thread, taking
// chunk numbers 0, 1, 2, … from one counter until dur has passed; a
// chunk started before the deadline is finished and counted. Every phase
// takes the same chunks in the same order. The rate is the sum over the
// threads of each one's chunks over its own span — from the common start
// to the end of its last chunk — so a thread that ends early does not
// count as idle time of the others.
func scalingPhase(ctx context.Context, c *piChunks, threads int, dur time.Duration) (scalingRun, error) {
	r := scalingRun{workers: make([]scalingWorker, threads), dur: dur}
	var next atomic.Int64
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	var start, deadline time.Time
	for i := range r.workers {
		ready.Add(1)
		done.Add(1)
		go func(w *scalingWorker) {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-gate // start and deadline are set before the gate opens
			w.work(ctx, c, &next, start, deadline)
		}(&r.workers[i])
	}
	ready.Wait()
	start = time.Now()
	deadline = start.Add(dur)
	close(gate)
	done.Wait()
	if err := ctx.Err(); err != nil {
		return r, err
	}
	for i, w := range r.workers {
		if w.err != nil {
			return r, w.err
		}
		if w.chunks == 0 {
			return r, fmt.Errorf("thread %d of %d completed no chunk (position %d) in %s: raise duration or lower position",
				i+1, threads, c.base, dur)
		}
		r.rate += float64(w.chunks) / w.span.Seconds()
	}
	return r, nil
}

// work computes and checks chunks until the deadline, the context's end
// or a chunk that fails its check.
func (w *scalingWorker) work(ctx context.Context, c *piChunks, next *atomic.Int64, start, deadline time.Time) {
	cpu0 := threadCPU()
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if w.err = c.run(next.Add(1) - 1); w.err != nil {
			return
		}
		w.chunks++
		w.span = time.Since(start)
	}
	if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 >= 0 {
		w.cpu = cpu1 - cpu0
	} else {
		w.cpu = -1
	}
}

// threadCPU is the CPU time, user and system, of the calling OS thread;
// −1 when it cannot be read.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// piChunks is the work: chunk i extracts π's hex digits after position
// base + 8·j, j the bit reversal of i mod 64, and checks them against the
// reference.
type piChunks struct {
	base uint64
	ref  [scalingWindow]uint64 // the 64 bits after each position, from Chudnovsky's series
}

func newPiChunks(base uint64) *piChunks {
	return &piChunks{base: base, ref: piReference(base)}
}

// run computes chunk i and checks it.
func (c *piChunks) run(i int64) error {
	j := bits.Reverse8(uint8(i%scalingWindow)) >> 2 // the window is 2⁶ chunks
	d := c.base + scalingStride*uint64(j)
	got := piHexFraction(d)
	if corruptResults && i == 2 {
		got ^= 1 << 40 // tests: a wrong chunk must fail the trial
	}
	return checkPiChunk(d, got, c.ref[j])
}

// piTolerance bounds, in units of 2⁻⁶⁴, how far piHexFraction(d) may be
// from the exact fraction: each of the four series floors at most d+17
// terms (d+1 below the position, 15 after, and the rest, under one unit
// together), each by less than one unit, and they are combined with
// weights 4, 2, 1, 1 of which 4 add and 4 subtract; the reference is
// exact to within a unit.
func piTolerance(d uint64) int64 { return 4*int64(d+17) + 2 }

// checkPiChunk fails unless got, the 64 bits of π's fraction after hex
// digit d, is within piTolerance of want, the reference's.
func checkPiChunk(d, got, want uint64) error {
	diff, tol := int64(got-want), piTolerance(d) // modulo 2⁶⁴: the fraction wraps
	if diff > tol || diff < -tol {
		return fmt.Errorf("validation: π's hexadecimal digits %d–%d: BBP computed %016x, the reference (Chudnovsky's series) has %016x: off by %d × 2⁻⁶⁴, more than the %d rounding allows",
			d+1, d+16, got, want, diff, tol)
	}
	return nil
}

// piHexFraction is frac(16^d·π) as a 64-bit binary fraction (2⁶⁴ = 1),
// whose hex digits are π's after its d-th: the Bailey–Borwein–Plouffe
// formula π = Σ 16⁻ᵏ (4/(8k+1) − 2/(8k+4) − 1/(8k+5) − 1/(8k+6)),
// evaluated in integers only (the same bits on every machine).
func piHexFraction(d uint64) uint64 {
	return 4*bbpSeries(d, 1) - 2*bbpSeries(d, 4) - bbpSeries(d, 5) - bbpSeries(d, 6)
}

// bbpSeries is frac(Σₖ 16^(d−k)/(8k+j)) as a 64-bit binary fraction. For
// k ≤ d the term's numerator is reduced modulo 8k+j, which leaves its
// fraction unchanged, and the quotient floored to 64 bits; of the terms
// after, those above 2⁻⁶⁴ are added (15 of them).
func bbpSeries(d, j uint64) uint64 {
	var s uint64
	for k := uint64(0); k <= d; k++ {
		m := 8*k + j
		q, _ := bits.Div64(pow16mod(d-k, m), 0, m)
		s += q
	}
	for t := uint64(1); t < 16; t++ {
		s += (1 << (64 - 4*t)) / (8*(d+t) + j)
	}
	return s
}

// pow16mod is 16^e mod m, for m < 2³² (so that products fit 64 bits).
func pow16mod(e, m uint64) uint64 {
	if m == 1 {
		return 0
	}
	r, b := uint64(1), 16%m
	for ; e > 0; e >>= 1 {
		if e&1 != 0 {
			r = r * b % m
		}
		b = b * b % m
	}
	return r
}

// piReference is, for each position of the window, the 64 bits of π's
// fraction after it, from a different algorithm — Chudnovsky's series,
// summed by binary splitting in big integers — so that a wrong BBP cannot
// agree with it.
func piReference(base uint64) [scalingWindow]uint64 {
	prec := uint(4*(base+scalingStride*scalingWindow) + 128) // bits: the last chunk's 64, and 64 to spare
	pi := chudnovskyPi(prec)
	mask := new(big.Int).SetUint64(math.MaxUint64)
	var ref [scalingWindow]uint64
	v := new(big.Int)
	for j := range ref {
		d := base + scalingStride*uint64(j)
		ref[j] = v.Rsh(pi, prec-uint(4*d)-64).And(v, mask).Uint64()
	}
	return ref
}

// chudnovsky640320over24 is 640320³ ÷ 24.
var chudnovsky640320over24 = new(big.Int).Quo(new(big.Int).Exp(big.NewInt(640320), big.NewInt(3), nil), big.NewInt(24))

// chudnovskyPi is π·2^prec, to within a few units: 426880·√10005 ·
// Q(0,n) ÷ T(0,n) with n terms of 47.1 bits each.
func chudnovskyPi(prec uint) *big.Int {
	n := int64(prec)/47 + 2
	_, q, t := chudnovskySplit(0, n)
	root := new(big.Int).Sqrt(new(big.Int).Lsh(big.NewInt(10005), 2*prec))
	num := new(big.Int).Mul(q, big.NewInt(426880))
	num.Mul(num, root)
	return num.Quo(num, t)
}

// chudnovskySplit is the binary splitting of Chudnovsky's series over
// terms [a, b): P, Q and T.
func chudnovskySplit(a, b int64) (p, q, t *big.Int) {
	if b-a == 1 {
		if a == 0 {
			p, q = big.NewInt(1), big.NewInt(1)
		} else {
			p = big.NewInt((6*a - 5) * (2*a - 1) * (6*a - 1))
			q = new(big.Int).Mul(big.NewInt(a*a*a), chudnovsky640320over24)
		}
		t = new(big.Int).Mul(p, big.NewInt(13591409+545140134*a))
		if a&1 == 1 {
			t.Neg(t)
		}
		return p, q, t
	}
	m := (a + b) / 2
	pa, qa, ta := chudnovskySplit(a, m)
	pb, qb, tb := chudnovskySplit(m, b)
	t = ta.Mul(ta, qb)
	t.Add(t, tb.Mul(pa, tb))
	return pa.Mul(pa, pb), qa.Mul(qa, qb), t
}
