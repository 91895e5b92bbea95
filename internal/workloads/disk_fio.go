package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var fioTool = workload.Tool{Binary: "fio", Package: "fio"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "disk.fio",
		Summary: "fio: sequential write, sequential read, random read, random write, one after another on one file in the data directory",
		Params: []workload.Param{
			workload.P("size", workload.Size, "256MiB", "size of the test file; time-based jobs wrap around it").Range(1<<20, 1<<40),
			workload.P("block_size", workload.Size, "1MiB", "request size of the sequential jobs").Range(512, 64<<20),
			workload.P("rand_block_size", workload.Size, "4KiB", "request size of the random jobs").Range(512, 64<<20),
			workload.P("iodepth", workload.Int, "16", "requests in flight with libaio; psync (the fallback) always has 1").Range(1, 4096),
			workload.P("runtime", workload.Duration, "5s", "measured time of each of the four jobs").Range(0.1, 86400),
			workload.P("direct", workload.Bool, "true", "O_DIRECT (bypass the page cache); where the filesystem refuses it, the trial runs buffered and reports direct = 0"),
		},
		Metrics: []workload.Metric{
			{Name: "seq_write_mbs", Unit: "MB/s", Better: result.Higher, Doc: "sequential write bandwidth (MB = 10^6 bytes)"},
			{Name: "seq_read_mbs", Unit: "MB/s", Better: result.Higher, Doc: "sequential read bandwidth (MB = 10^6 bytes)"},
			{Name: "rand_read_iops", Unit: "IOPS", Better: result.Higher, Doc: "random reads per second", Combine: workload.Rate},
			{Name: "rand_write_iops", Unit: "IOPS", Better: result.Higher, Doc: "random writes per second", Combine: workload.Rate},
			{Name: "rand_read_lat_p50", Unit: "ms", Better: result.Lower, Doc: "median completion latency of a random read", Combine: workload.PairsOnly},
			{Name: "rand_read_lat_p99", Unit: "ms", Better: result.Lower, Doc: "99th percentile completion latency of a random read", Combine: workload.PairsOnly},
			{Name: "rand_write_lat_p50", Unit: "ms", Better: result.Lower, Doc: "median completion latency of a random write", Combine: workload.PairsOnly},
			{Name: "rand_write_lat_p99", Unit: "ms", Better: result.Lower, Doc: "99th percentile completion latency of a random write", Combine: workload.PairsOnly},
			{Name: "direct", Unit: "bool", Better: result.Higher, Doc: "1 when the jobs used O_DIRECT, 0 when the filesystem refused it and they ran buffered: a flag, not a score"},
		},
		Tools: []workload.Tool{fioTool},
		Run:   map[string]workload.RunFunc{workload.Main: runFio},
		Smoke: map[string]string{"size": "16MiB", "runtime": "1s"},
		Trial: workload.Trial{
			// Four jobs, one after another, each for runtime.
			Measures: func(params map[string]string) (time.Duration, bool) {
				d, err := time.ParseDuration(params["runtime"])
				return 4 * d, err == nil && d > 0
			},
		},
	})
}

// fioJobs are the four jobs in the order they run; each is stonewalled
// behind the previous one, and all use the same file, which the first
// writes.
var fioJobs = []struct {
	name, rw string
	write    bool
	random   bool
}{
	{"seq_write", "write", true, false},
	{"seq_read", "read", false, false},
	{"rand_read", "randread", false, true},
	{"rand_write", "randwrite", true, true},
}

// fioSetup is what the probe settled on.
type fioSetup struct {
	engine string // libaio or psync
	direct bool
}

// fioEscape escapes the colons fio would take as separators between file names.
func fioEscape(path string) string { return strings.ReplaceAll(path, ":", `\:`) }

// fioJobFile renders the job file for one trial.
func fioJobFile(dir string, p workload.Values, s fioSetup) string {
	depth := p.Int("iodepth")
	if s.engine != "libaio" {
		depth = 1 // a synchronous engine has one request in flight whatever it is told
	}
	direct := 0
	if s.direct {
		direct = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[global]\ndirectory=%s\nfilename=ctrbench-fio.dat\nsize=%d\nioengine=%s\niodepth=%d\ndirect=%d\n",
		fioEscape(dir), p.Int("size"), s.engine, depth, direct)
	// thread: jobs run as threads of one fio process. Forked job processes
	// call setsid() and escape a process-group kill, so a cancelled trial
	// (or a stopped neighbour) left them running.
	fmt.Fprintf(&b, "runtime=%dms\ntime_based=1\ninvalidate=1\nthread=1\n", max(1, p.Duration("runtime").Milliseconds()))
	for _, j := range fioJobs {
		bs := p.Int("block_size")
		if j.random {
			bs = p.Int("rand_block_size")
		}
		fmt.Fprintf(&b, "\n[%s]\nstonewall\nrw=%s\nbs=%d\n", j.name, j.rw, bs)
		if j.write {
			// Buffered writes end in the page cache; the final fsync makes
			// the job pay for getting them to the device.
			b.WriteString("end_fsync=1\n")
		}
	}
	return b.String()
}

// fioDirectRefused reports whether fio's complaint is that the filesystem
// refuses O_DIRECT (EINVAL at open, as tmpfs before Linux 6.6 and ramfs do).
func fioDirectRefused(stderr string) bool {
	return strings.Contains(stderr, "does not support O_DIRECT") || strings.Contains(stderr, "does not support direct=1")
}

// fioProbe settles the engine and O_DIRECT with a tiny untimed job (1 MiB
// in random-job requests): libaio
// first, psync when libaio cannot run (not built in, io_setup refused);
// O_DIRECT as asked, buffered when the filesystem refuses it. The notes
// say what was tried, for the record.
func fioProbe(ctx context.Context, path, dir string, p workload.Values) (fioSetup, []string, error) {
	s := fioSetup{engine: "libaio", direct: p.Bool("direct")}
	var notes []string
	for {
		args := []string{"--name=probe", "--directory=" + fioEscape(dir), "--filename=ctrbench-fio-probe",
			"--size=" + strconv.FormatInt(max(1<<20, p.Int("rand_block_size")), 10), "--bs=" + p.String("rand_block_size"), "--rw=write",
			"--ioengine=" + s.engine, "--iodepth=1", "--direct=" + strconv.Itoa(b2i(s.direct)), "--thread", "--output-format=json"}
		var out, errb bytes.Buffer
		cmd := toolCommand(ctx, path, args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		runErr := cmd.Run()
		os.Remove(filepath.Join(dir, "ctrbench-fio-probe"))
		if ctx.Err() != nil {
			return s, notes, ctx.Err()
		}
		if runErr == nil {
			if j, err := decodeFio(out.Bytes()); err == nil && len(j.Jobs) == 1 && j.Jobs[0].Error == 0 {
				return s, notes, nil
			}
		}
		note := fmt.Sprintf("probe with ioengine=%s direct=%d failed: %s", s.engine, b2i(s.direct), lastLine(errb.String(), out.String()))
		notes = append(notes, note)
		switch {
		case s.direct && fioDirectRefused(errb.String()):
			s.direct = false
		case s.engine == "libaio":
			s.engine = "psync"
		default:
			return s, notes, fmt.Errorf("fio cannot write to %s: %s", dir, strings.TrimSpace(errb.String()+"\n"+out.String()))
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func runFio(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(fioTool)
	if err != nil {
		return nil, "", err
	}
	dir, err := dataDir(env)
	if err != nil {
		return nil, "", err
	}
	defer emptyDataDir(dir)
	setup, notes, err := fioProbe(ctx, path, dir, p)
	if err != nil {
		return nil, strings.Join(notes, "\n"), err
	}
	for _, n := range notes {
		diskLog(env, "disk.fio: %s", n)
	}
	diskLog(env, "disk.fio: ioengine=%s direct=%d", setup.engine, b2i(setup.direct))
	job := fioJobFile(dir, p, setup)
	jobPath := filepath.Join(dir, "ctrbench.fio")
	if err := os.WriteFile(jobPath, []byte(job), 0o644); err != nil {
		return nil, "", err
	}
	timeout := 4*p.Duration("runtime") + 10*time.Minute // laying out a large file takes a while
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdout, raw, runErr := runTool(cctx, path, "--output-format=json", jobPath)
	record := strings.Join(append(notes, "job file:\n"+job, raw), "\n")
	obs, err := parseFio(stdout, runErr)
	if err != nil {
		return nil, record, err
	}
	return append(obs, result.Observation{Metric: "direct", Value: float64(b2i(setup.direct)), Unit: "bool", Better: result.Higher}), "", nil
}

// fioJSON is the part of fio's JSON output we read.
type fioJSON struct {
	Jobs []fioJob `json:"jobs"`
}

type fioJob struct {
	Name  string `json:"jobname"`
	Error int    `json:"error"`
	Read  fioDir `json:"read"`
	Write fioDir `json:"write"`
}

type fioDir struct {
	IOBytes  int64   `json:"io_bytes"`
	BWBytes  float64 `json:"bw_bytes"`
	IOPS     float64 `json:"iops"`
	Runtime  float64 `json:"runtime"` // ms
	TotalIOs int64   `json:"total_ios"`
	Clat     struct {
		N          int64              `json:"N"`
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

// decodeFio decodes fio's JSON, skipping the notes fio prints on stdout
// before it ("note: both iodepth >= 1 and synchronous I/O engine…").
func decodeFio(out []byte) (*fioJSON, error) {
	i := bytes.Index(out, []byte("\n{"))
	switch {
	case bytes.HasPrefix(out, []byte("{")):
		i = 0
	case i >= 0:
		i++
	default:
		return nil, fmt.Errorf("fio printed no JSON")
	}
	var j fioJSON
	if err := json.Unmarshal(out[i:], &j); err != nil {
		return nil, fmt.Errorf("fio output is not the JSON expected: %w", err)
	}
	return &j, nil
}

// parseFio checks every job and converts the results. runErr is fio's
// exit status: when it failed, the JSON (if any) usually says which job
// and why, which is the better message.
func parseFio(stdout []byte, runErr error) ([]result.Observation, error) {
	j, err := decodeFio(stdout)
	if err != nil {
		if runErr != nil {
			return nil, runErr
		}
		return nil, err
	}
	byName := map[string]fioJob{}
	for _, job := range j.Jobs {
		if _, dup := byName[job.Name]; dup {
			return nil, fmt.Errorf("fio reported job %s twice", job.Name)
		}
		byName[job.Name] = job
	}
	var obs []result.Observation
	add := func(metric string, v float64, unit string, better result.Better) {
		obs = append(obs, result.Observation{Metric: metric, Value: v, Unit: unit, Better: better})
	}
	for _, spec := range fioJobs {
		job, ok := byName[spec.name]
		if !ok {
			if runErr != nil {
				return nil, fmt.Errorf("fio job %s did not run: %w", spec.name, runErr)
			}
			return nil, fmt.Errorf("fio output has no job %s", spec.name)
		}
		if job.Error != 0 {
			return nil, fmt.Errorf("fio job %s failed with error %d (%s)", spec.name, job.Error, syscall.Errno(job.Error).Error())
		}
		d, other, dirName := job.Read, job.Write, "read"
		if spec.write {
			d, other, dirName = job.Write, job.Read, "write"
		}
		if d.IOBytes <= 0 || d.Runtime <= 0 {
			return nil, fmt.Errorf("fio job %s transferred %d bytes in %.0f ms: nothing measured", spec.name, d.IOBytes, d.Runtime)
		}
		if other.IOBytes != 0 {
			return nil, fmt.Errorf("fio job %s, a %s job, also did %d bytes of the other direction", spec.name, dirName, other.IOBytes)
		}
		// fio's rates are its byte and request counts over its runtime;
		// anything else means the JSON is not one consistent run.
		if implied := float64(d.IOBytes) / (d.Runtime / 1000); !agrees(d.BWBytes, implied, 0.02, 0) {
			return nil, fmt.Errorf("fio job %s: bw_bytes %.0f disagrees with io_bytes %d over %.0f ms", spec.name, d.BWBytes, d.IOBytes, d.Runtime)
		}
		if implied := float64(d.TotalIOs) / (d.Runtime / 1000); !agrees(d.IOPS, implied, 0.02, 0) {
			return nil, fmt.Errorf("fio job %s: iops %.1f disagrees with total_ios %d over %.0f ms", spec.name, d.IOPS, d.TotalIOs, d.Runtime)
		}
		if !spec.random {
			add(spec.name+"_mbs", d.BWBytes/1e6, "MB/s", result.Higher)
			continue
		}
		if err := positive("fio job "+spec.name+" iops", d.IOPS); err != nil {
			return nil, err
		}
		add(spec.name+"_iops", d.IOPS, "IOPS", result.Higher)
		for _, q := range []struct{ key, metric string }{{"50.000000", "_lat_p50"}, {"99.000000", "_lat_p99"}} {
			ns, ok := d.Clat.Percentile[q.key]
			if !ok {
				return nil, fmt.Errorf("fio job %s has no clat_ns percentile %s", spec.name, q.key)
			}
			if err := positive("fio job "+spec.name+" completion latency percentile "+q.key, ns); err != nil {
				return nil, err
			}
			add(spec.name+q.metric, ns/1e6, "ms", result.Lower)
		}
	}
	if runErr != nil {
		// Every job looks fine, yet fio failed: say so rather than trust it.
		return nil, fmt.Errorf("fio reported every job but exited with an error: %w", runErr)
	}
	return obs, nil
}
