package workloads

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// blowfishP is Blowfish's P-array: π's first 144 hexadecimal digits after
// the point, 8 to a word (Schneier, 1993), a table copied into every
// Blowfish implementation — a reference for π independent of both of
// cpu.scaling's algorithms.
var blowfishP = []uint32{
	0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0,
	0x082EFA98, 0xEC4E6C89, 0x452821E6, 0x38D01377, 0xBE5466CF, 0x34E90C6C,
	0xC0AC29B7, 0xC97C50DD, 0x3F84D5B5, 0xB5470917, 0x9216D5D9, 0x8979FB1B,
}

// Both kernels give π's known digits: BBP at the start and at Bailey's
// published position (the hex digits from the millionth: 26C65E52CB4593,
// Bailey, Borwein & Plouffe 1997, Table 3), Chudnovsky's reference at the
// start; and the two agree over a window far out.
func TestPiDigits(t *testing.T) {
	for i, w := range blowfishP {
		if got := uint32(piHexFraction(uint64(8*i)) >> 32); got != w {
			t.Errorf("BBP: π's hex digits %d–%d are %08X, want %08X", 8*i+1, 8*i+8, got, w)
		}
	}
	ref := piReference(0)
	for j, w := range blowfishP[:len(blowfishP)-1] {
		// ref[j] holds digits 8j+1 … 8j+16: two words.
		if want := uint64(w)<<32 | uint64(blowfishP[j+1]); ref[j] != want {
			t.Errorf("Chudnovsky: π's hex digits %d–%d are %016X, want %016X", 8*j+1, 8*j+16, ref[j], want)
		}
	}
	// Digit 10⁶ is the 2; the next 40 bits are exact within the
	// tolerance there (about 2²² units of 2⁻⁶⁴).
	if got := piHexFraction(999_999) >> 24; got != 0x26C65E52CB {
		t.Errorf("BBP: π's hex digits from the millionth are %010X…, want 26C65E52CB…", got)
	}
	c := newPiChunks(16384)
	for i := range int64(scalingWindow) {
		if err := c.run(i); err != nil {
			t.Error(err)
		}
	}
}

// The check passes the rounding the tolerance allows and nothing more; a
// corrupted chunk fails the trial, with the digits named.
func TestPiChunkCheck(t *testing.T) {
	const d = 4096
	want := piReference(d)[0]
	tol := uint64(piTolerance(d))
	for _, got := range []uint64{want, want + tol, want - tol, piHexFraction(d)} {
		if err := checkPiChunk(d, got, want); err != nil {
			t.Errorf("%016x against %016x: %v", got, want, err)
		}
	}
	for _, got := range []uint64{want + tol + 1, want - tol - 1, want ^ 1<<40, want + 1<<63} {
		if err := checkPiChunk(d, got, want); err == nil || !strings.Contains(err.Error(), "validation: π's hexadecimal digits 4097–4112") {
			t.Errorf("%016x against %016x: %v, want a validation error", got, want, err)
		}
	}
	// The reference wraps: a fraction just below 1 and one just above 0
	// are close.
	if err := checkPiChunk(d, 5, math.MaxUint64-5); err != nil {
		t.Errorf("across the wrap: %v", err)
	}

	corruptResults = true
	t.Cleanup(func() { corruptResults = false })
	p := values(t, "cpu.scaling", map[string]string{"position": "1024", "duration": "100ms", "threads": "1"})
	if _, _, err := runScaling(context.Background(), p, workload.Env{}); err == nil || !strings.Contains(err.Error(), "validation:") {
		t.Errorf("a corrupted chunk: %v, want a validation error", err)
	}
}

func TestScalingThreads(t *testing.T) {
	for _, c := range []struct {
		asked, ncpu int
		quota       float64
		want        int
	}{
		{0, 2, 0, 2},   // no quota: the affinity mask
		{0, 8, 1.5, 2}, // --cpus 1.5: 2 threads
		{0, 2, 0.5, 1}, // --cpus 0.5: 1
		{0, 4, 8, 4},   // a quota above the CPUs: the CPUs
		{0, 1, 0, 1},   // --cpuset 0
		{3, 2, 0.5, 3}, // asked: as asked, oversubscribed
	} {
		if got := scalingThreads(c.asked, c.ncpu, c.quota); got != c.want {
			t.Errorf("scalingThreads(%d, %d CPUs, quota %v) = %d, want %d", c.asked, c.ncpu, c.quota, got, c.want)
		}
	}
}

func TestScalingObservations(t *testing.T) {
	m := obsMap(scalingObservations(100, 190, 2))
	if m["speedup"] != 1.9 || !near(m["efficiency_pct"], 95, 1e-12) || m["threads"] != 2 || m["single_score"] != 100 || m["multi_score"] != 190 {
		t.Errorf("100 and 190 chunks/s with 2 threads: %v", m)
	}
	m = obsMap(scalingObservations(100, 100, 1))
	if m["speedup"] != 1 || m["efficiency_pct"] != 100 {
		t.Errorf("one thread, the same rate: %v", m)
	}
	s, _ := workload.Lookup("cpu.scaling")
	if s.Metrics[0].Name != "efficiency_pct" {
		t.Errorf("headline %s, want efficiency_pct", s.Metrics[0].Name)
	}
	for _, o := range scalingObservations(1, 2, 2) {
		if mm, _ := s.Metric(o.Metric); mm.Unit != o.Unit || mm.Better != o.Better {
			t.Errorf("%s: observed in %s (%s), declared in %s (%s)", o.Metric, o.Unit, o.Better, mm.Unit, mm.Better)
		}
	}
}

func TestScalingParams(t *testing.T) {
	s, _ := workload.Lookup("cpu.scaling")
	for _, c := range []struct {
		params map[string]string
		bad    string // the parameter refused, "" none
	}{
		{map[string]string{}, ""},
		{map[string]string{"position": "131072", "threads": "1024", "duration": "100ms"}, ""},
		{map[string]string{"position": "1023"}, "position"},
		{map[string]string{"position": "131073"}, "position"},
		{map[string]string{"threads": "-1"}, "threads"},
		{map[string]string{"threads": "two"}, "threads"},
		{map[string]string{"duration": "50ms"}, "duration"},
	} {
		v, errs := s.Resolve(c.params)
		switch {
		case c.bad == "" && errs != nil:
			t.Errorf("%v: %v", c.params, errs)
		case c.bad != "" && errs[c.bad] == nil:
			t.Errorf("%v: accepted (%v), want %s refused", c.params, v, c.bad)
		}
	}
	if v, _ := s.Resolve(nil); v.Int("position") != 16384 || v.Int("threads") != 0 || v.Duration("duration") != 2*time.Second {
		t.Errorf("defaults %v", v)
	}
}

// TestScalingRuns runs the workload in-process, 2 × 500 ms with two
// threads and with one: the metrics agree with each other, and the
// bounds are physical (a thread gets at most all of its time).
func TestScalingRuns(t *testing.T) {
	for _, threads := range []string{"2", "1"} {
		p := values(t, "cpu.scaling", map[string]string{"duration": "500ms", "threads": threads})
		obs, raw, err := runScaling(context.Background(), p, workload.Env{})
		if err != nil {
			t.Fatalf("threads %s: %v\n%s", threads, err, raw)
		}
		m := obsMap(obs)
		t.Logf("threads %s: %v\n%s", threads, m, raw)
		n := m["threads"]
		if n != float64(p.Int("threads")) || m["single_score"] <= 0 || m["multi_score"] <= 0 {
			t.Fatalf("implausible %v", m)
		}
		if !near(m["speedup"], m["multi_score"]/m["single_score"], 1e-12) || !near(m["efficiency_pct"], 100*m["speedup"]/n, 1e-12) {
			t.Errorf("inconsistent %v", m)
		}
		// The speedup is the ratio of two timed phases; a busy machine
		// starves either (2.39 seen for one thread against itself with a
		// core kept busy), so only its consistency above is checked.
		// A thread is given at most all of its time (the kernel accounts
		// CPU time to the microsecond: 1% spare), and some of it.
		for _, k := range []string{"single_cpu_pct", "multi_cpu_pct"} {
			if v, ok := m[k]; !ok || v <= 0 || v > 101 {
				t.Errorf("%s = %v (present %v)", k, v, ok)
			}
		}
	}
}
