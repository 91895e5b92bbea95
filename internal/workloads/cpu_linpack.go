package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// linpackTool is ctrbench's own kernel (kernels/linpack.c), built by the
// Makefile beside bin/ctrbench.
var linpackTool = workload.Tool{Binary: "ctb-linpack"}

// linpackSeed fixes the matrix, so every trial of every cell solves the
// same system.
const linpackSeed = "1"

// corruptResults makes ctrbench's kernels spoil their answer after timing
// (their --corrupt flag). Only tests set it, to prove that validation
// catches a wrong answer.
var corruptResults bool

// maxScaledResidual is HPL's acceptance threshold.
const maxScaledResidual = 16

func init() {
	workload.Register(&workload.Spec{
		Type:    "cpu.linpack",
		Summary: "LINPACK-style dense solve: LU with partial pivoting (OpenBLAS dgesv) of a random n×n system, GFLOPS, residual-checked",
		Params: []workload.Param{
			workload.P("n", workload.Int, "1000", "order of the matrix; needs about 8·n² bytes, at most 92% of the memory available (S0: 15000 in a 2 GiB container, S3: 1000)").Range(100, 60000),
			workload.P("threads", workload.Int, "1", "OpenBLAS threads (ctb-linpack's --threads, which calls openblas_set_num_threads); auto = "+instanceCPUsDoc).Range(1, 1024).OrAuto(),
			workload.P("repeat", workload.Int, "1", "solves of the same system in one trial; the best and the mean are reported").Range(1, 1000),
		},
		Metrics: []workload.Metric{
			{Name: "gflops", Unit: "GFLOPS", Better: result.Higher, Doc: "(2/3·n³ + 2·n²) / time of the best solve", Combine: workload.Rate},
			{Name: "gflops_mean", Unit: "GFLOPS", Better: result.Higher, Doc: "the same over the mean solve time", Combine: workload.Rate},
			{Name: "seconds", Unit: "s", Better: result.Lower, Doc: "time of the best solve"},
			{Name: "scaled_residual", Unit: "ratio", Better: result.Lower, Doc: "largest ||Ax−b||∞ / (||A||∞·||x||∞·n·ε) over the solves; must be below 16"},
		},
		Tools: []workload.Tool{linpackTool},
		Run:   map[string]workload.RunFunc{workload.Main: runLinpack},
		Smoke: map[string]string{"n": "300"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("repeat × (2/3·n³ + 2·n²) flops at %g GFLOPS a thread, auto as the instance's CPUs, and repeat × 2·n² matrix elements generated and checked at %g M/s",
					linpackRate/1e9, linpackCheckRate/1e6),
				Time: linpackTime,
			},
		},
	})
}

// linpackTime is the dry run's estimate of a trial on an instance that may
// use cpus CPUs (what threads: auto resolves to).
func linpackTime(p workload.Values, cpus int) (time.Duration, bool) {
	n, threads := float64(p.Int("n")), float64(cpus)
	if !p.IsAuto("threads") {
		threads = float64(p.Int("threads"))
	}
	solve := (2.0/3*n*n*n+2*n*n)/(linpackRate*threads) + 2*n*n/linpackCheckRate
	return time.Duration(float64(p.Int("repeat")) * solve * float64(time.Second)), true
}

// linpackThreads is the thread count of a trial: the one asked for, or
// with auto every CPU the instance may use.
func linpackThreads(p workload.Values, ncpu int, quota float64) int64 {
	if p.IsAuto("threads") {
		return int64(instanceCPUs(ncpu, quota))
	}
	return p.Int("threads")
}

// memAvailable returns the bytes this process may still allocate: the
// smaller of MemAvailable and its cgroup's memory limit, and where that
// figure came from. A variable so tests can pose as a small machine.
var memAvailable = func() (int64, string, error) {
	avail, err := meminfoAvailable("/proc/meminfo")
	if err != nil {
		return 0, "", err
	}
	src := "MemAvailable in /proc/meminfo"
	if lim := cgroup.Self().MemoryBytes; lim > 0 && lim < avail {
		avail, src = lim, "the cgroup memory limit"
	}
	return avail, src, nil
}

// meminfoAvailable reads MemAvailable (kB) from a meminfo file, in bytes.
func meminfoAvailable(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("reading available memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			break
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("reading available memory: no MemAvailable line in %s", path)
}

// checkMemory fails when need bytes exceed 92% of the memory available, so
// a trial that would swap or be OOM-killed stops before it starts. 92%
// leaves room for the agent and the kernel's own buffers while still
// admitting S0's Case 1 (n=15000, 1.8 GB, in a 2 GiB container).
func checkMemory(need int64, what string) error {
	avail, src, err := memAvailable()
	if err != nil {
		return err
	}
	if limit := avail / 100 * 92; need > limit {
		return fmt.Errorf("%s needs %.2f GB but only %.2f GB may be used (92%% of %.2f GB, %s): lower it",
			what, float64(need)/1e9, float64(limit)/1e9, float64(avail)/1e9, src)
	}
	return nil
}

// linpackMemory is what ctb-linpack allocates for order n: the matrix and
// a few vectors (it regenerates the original matrix for the check rather
// than keeping a copy).
func linpackMemory(n int64) int64 { return 8*n*n + 48*n }

func runLinpack(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	ncpu, quota := cpusNow()
	n, threads, repeat := p.Int("n"), linpackThreads(p, ncpu, quota), p.Int("repeat")
	seen := threadsSeen(int(threads), p.String("threads"), ncpu, quota)
	if env.See != nil {
		env.See("cpu.linpack.threads", seen)
	}
	diskLog(env, "cpu.linpack: threads %s", seen)
	if err := checkMemory(linpackMemory(n), fmt.Sprintf("cpu.linpack n=%d", n)); err != nil {
		return nil, "", err
	}
	path, err := lookTool(linpackTool)
	if err != nil {
		return nil, "", err
	}
	args := []string{"--n", strconv.FormatInt(n, 10), "--threads", strconv.FormatInt(threads, 10),
		"--repeat", strconv.FormatInt(repeat, 10), "--seed", linpackSeed}
	if corruptResults {
		args = append(args, "--corrupt")
	}
	stdout, raw, runErr := runTool(ctx, path, args...)
	return parseLinpack(stdout, raw, runErr, n, threads)
}

// linpackJSON is ctb-linpack's output line. Pointers tell a missing or null
// (non-finite) number from zero.
type linpackJSON struct {
	N              *int64   `json:"n"`
	Threads        *int64   `json:"threads"`
	Seconds        *float64 `json:"seconds"`
	SecondsMean    *float64 `json:"seconds_mean"`
	GFLOPS         *float64 `json:"gflops"`
	GFLOPSMean     *float64 `json:"gflops_mean"`
	Residual       *float64 `json:"residual"`
	ScaledResidual *float64 `json:"scaled_residual"`
}

// parseLinpack validates ctb-linpack's output and turns it into
// observations; anything unexpected is an error with the raw output kept.
func parseLinpack(stdout []byte, raw string, runErr error, n, threads int64) ([]result.Observation, string, error) {
	var j linpackJSON
	if err := json.Unmarshal(stdout, &j); err != nil {
		if runErr != nil {
			return nil, raw, runErr
		}
		return nil, raw, fmt.Errorf("ctb-linpack output is not the JSON expected: %w", err)
	}
	// The residual decides first: a wrong answer is the reason, whatever
	// the exit status says.
	if j.ScaledResidual == nil {
		return nil, raw, fmt.Errorf("residual check failed: ctb-linpack reported no finite scaled residual (the solution has NaN or Inf)")
	}
	if !(*j.ScaledResidual < maxScaledResidual) {
		return nil, raw, fmt.Errorf("residual check failed: scaled residual %.3g is not below %d (HPL's criterion); the solution is wrong", *j.ScaledResidual, maxScaledResidual)
	}
	if runErr != nil {
		return nil, raw, runErr
	}
	if j.N == nil || *j.N != n || j.Threads == nil || *j.Threads != threads {
		return nil, raw, fmt.Errorf("ctb-linpack solved a different problem than asked (want n=%d threads=%d)", n, threads)
	}
	for name, v := range map[string]*float64{"seconds": j.Seconds, "seconds_mean": j.SecondsMean, "gflops": j.GFLOPS, "gflops_mean": j.GFLOPSMean} {
		if v == nil || !(*v > 0) || math.IsInf(*v, 0) {
			return nil, raw, fmt.Errorf("ctb-linpack reported no positive finite %s", name)
		}
	}
	return []result.Observation{
		{Metric: "gflops", Value: *j.GFLOPS, Unit: "GFLOPS", Better: result.Higher},
		{Metric: "gflops_mean", Value: *j.GFLOPSMean, Unit: "GFLOPS", Better: result.Higher},
		{Metric: "seconds", Value: *j.Seconds, Unit: "s", Better: result.Lower},
		{Metric: "scaled_residual", Value: *j.ScaledResidual, Unit: "ratio", Better: result.Lower},
	}, "", nil
}
