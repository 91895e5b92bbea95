package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// streamTool is ctrbench's own kernel (kernels/stream.c), built by the
// Makefile beside bin/ctrbench.
var streamTool = workload.Tool{Binary: "ctb-stream"}

// STREAM's rule: each array at least four times the largest cache, and
// never fewer than this many elements.
const (
	streamCacheFactor = 4
	streamMinAuto     = 10_000_000
)

// cacheDir is where the kernel describes cpu0's caches; a variable for tests.
var cacheDir = "/sys/devices/system/cpu/cpu0/cache"

func init() {
	workload.Register(&workload.Spec{
		Type:    "mem.stream",
		Summary: "STREAM memory bandwidth: Copy, Scale, Add, Triad on three arrays of doubles (OpenMP), every element checked",
		Params: []workload.Param{
			workload.P("array_size", workload.Int, "0", "elements per array (8 bytes each, three arrays); 0 = auto: 4× the largest cache, at least 10M (S0: 60000000)").Range(0, 1e11),
			workload.P("ntimes", workload.Int, "20", "iterations of the four kernels; the first is not timed in the result (S0: 200); at most 250, where the checked values would overflow").Range(2, 250),
			workload.P("threads", workload.Int, "1", "OpenMP threads").Range(1, 1024),
		},
		// S0's Table IV and Fig. 5 show every kernel: each a matrix.
		Metrics: []workload.Metric{
			{Name: "copy", Unit: "GB/s", Better: result.Higher, Doc: "c = a: 16 bytes per element over the best time"},
			{Name: "scale", Unit: "GB/s", Better: result.Higher, Doc: "b = q·c: 16 bytes per element over the best time", Matrix: true},
			{Name: "add", Unit: "GB/s", Better: result.Higher, Doc: "c = a + b: 24 bytes per element over the best time", Matrix: true},
			{Name: "triad", Unit: "GB/s", Better: result.Higher, Doc: "a = b + q·c: 24 bytes per element over the best time", Matrix: true},
			{Name: "array_size", Unit: "elements", Better: result.Higher, Doc: "elements per array actually used (what auto chose); a record, not a performance figure"},
		},
		Tools: []workload.Tool{streamTool},
		Run:   map[string]workload.RunFunc{workload.Main: runStream},
		Smoke: map[string]string{"array_size": "2000000", "ntimes": "5"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("array_size × (80·ntimes + 48) bytes at %g GB/s, the arrays written, the kernels run and checked, an auto size at %dM elements",
					streamRate/1e9, streamMinAuto/1_000_000),
				Time: streamTime,
			},
		},
	})
}

// streamTime is the dry run's estimate of a trial: three arrays written,
// ntimes iterations of the four kernels (80 bytes an element), the arrays
// read by the check; an auto size at its least.
func streamTime(p workload.Values, _ int) (time.Duration, bool) {
	n := p.Int("array_size")
	if n == 0 {
		n = streamMinAuto
	}
	bytes := float64(n) * float64(80*p.Int("ntimes")+48)
	return time.Duration(bytes / streamRate * float64(time.Second)), true
}

// largestCache returns the size in bytes of the highest-level cache of cpu0
// (the last-level cache), from sysfs.
func largestCache(dir string) (int64, error) {
	entries, err := filepath.Glob(filepath.Join(dir, "index*"))
	if err != nil || len(entries) == 0 {
		return 0, fmt.Errorf("no cache description in %s", dir)
	}
	var bestLevel, bestSize int64
	for _, e := range entries {
		lb, err1 := os.ReadFile(filepath.Join(e, "level"))
		sb, err2 := os.ReadFile(filepath.Join(e, "size"))
		if err1 != nil || err2 != nil {
			continue
		}
		level, err := strconv.ParseInt(strings.TrimSpace(string(lb)), 10, 64)
		if err != nil {
			continue
		}
		size, err := parseCacheSize(strings.TrimSpace(string(sb)))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", filepath.Join(e, "size"), err)
		}
		if level > bestLevel || level == bestLevel && size > bestSize {
			bestLevel, bestSize = level, size
		}
	}
	if bestSize == 0 {
		return 0, fmt.Errorf("no readable cache size in %s", dir)
	}
	return bestSize, nil
}

// parseCacheSize reads sysfs cache sizes: "48K", "2048K", "32M" (binary units).
func parseCacheSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("cache size %q is not a size", s)
	}
	return n * mult, nil
}

// streamAutoSize applies STREAM's rule to a last-level cache of llc bytes.
func streamAutoSize(llc int64) int64 {
	n := (streamCacheFactor*llc + 7) / 8
	return max(n, streamMinAuto)
}

// streamMemory is what ctb-stream allocates: three arrays of doubles.
func streamMemory(n int64) int64 { return 3 * 8 * n }

func runStream(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	size, ntimes, threads := p.Int("array_size"), p.Int("ntimes"), p.Int("threads")
	if size == 0 {
		llc, err := largestCache(cacheDir)
		if err != nil {
			return nil, "", fmt.Errorf("array_size auto needs the cache size: %w; set array_size", err)
		}
		size = streamAutoSize(llc)
		if env.Log != nil {
			env.Log("mem.stream: array_size auto = %d elements (4 × %s last-level cache, at least %d)", size, vocab.Size(llc), streamMinAuto)
		}
	}
	if err := checkMemory(streamMemory(size), fmt.Sprintf("mem.stream array_size=%d (three arrays)", size)); err != nil {
		return nil, "", err
	}
	path, err := lookTool(streamTool)
	if err != nil {
		return nil, "", err
	}
	args := []string{"--size", strconv.FormatInt(size, 10), "--ntimes", strconv.FormatInt(ntimes, 10),
		"--threads", strconv.FormatInt(threads, 10)}
	if corruptResults {
		args = append(args, "--corrupt")
	}
	stdout, raw, runErr := runTool(ctx, path, args...)
	return parseStream(stdout, raw, runErr, size, threads)
}

// streamJSON is ctb-stream's output line.
type streamJSON struct {
	ArraySize *int64   `json:"array_size"`
	Threads   *int64   `json:"threads"`
	Copy      *float64 `json:"copy_gbs"`
	Scale     *float64 `json:"scale_gbs"`
	Add       *float64 `json:"add_gbs"`
	Triad     *float64 `json:"triad_gbs"`
	Validated *bool    `json:"validated"`
}

// parseStream validates ctb-stream's output and turns it into observations;
// anything unexpected is an error with the raw output kept.
func parseStream(stdout []byte, raw string, runErr error, size, threads int64) ([]result.Observation, string, error) {
	var j streamJSON
	if err := json.Unmarshal(stdout, &j); err != nil {
		if runErr != nil {
			return nil, raw, runErr
		}
		return nil, raw, fmt.Errorf("ctb-stream output is not the JSON expected: %w", err)
	}
	if j.Validated == nil || !*j.Validated {
		why := "the arrays do not hold the values the kernels must produce"
		if runErr != nil {
			why = strings.TrimPrefix(lastLine(raw), "ctb-stream: validation failed: ")
		}
		return nil, raw, fmt.Errorf("validation failed: %s", why)
	}
	if runErr != nil {
		return nil, raw, runErr
	}
	if j.ArraySize == nil || *j.ArraySize != size || j.Threads == nil || *j.Threads != threads {
		return nil, raw, fmt.Errorf("ctb-stream ran a different configuration than asked (want array_size=%d threads=%d)", size, threads)
	}
	obs := make([]result.Observation, 0, 5)
	for _, k := range []struct {
		name string
		v    *float64
	}{{"copy", j.Copy}, {"scale", j.Scale}, {"add", j.Add}, {"triad", j.Triad}} {
		if k.v == nil || !(*k.v > 0) || math.IsInf(*k.v, 0) {
			return nil, raw, fmt.Errorf("ctb-stream reported no positive finite %s rate", k.name)
		}
		obs = append(obs, result.Observation{Metric: k.name, Value: *k.v, Unit: "GB/s", Better: result.Higher})
	}
	obs = append(obs, result.Observation{Metric: "array_size", Value: float64(size), Unit: "elements", Better: result.Higher})
	return obs, "", nil
}
