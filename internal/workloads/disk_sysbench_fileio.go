package workloads

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// sbFileNum is sysbench's default --file-num, kept: the files are spread
// over 128 files as in every published sysbench fileio result.
const sbFileNum = 128

// sbFileModes maps each --file-test-mode to the line sysbench prints for
// it and the directions it measures.
var sbFileModes = map[string]struct {
	doing       string
	read, write bool
}{
	"seqwr": {"Doing sequential write (creation) test", false, true},
	"seqrd": {"Doing sequential read test", true, false},
	"rndrd": {"Doing random read test", true, false},
	"rndwr": {"Doing random write test", false, true},
	"rndrw": {"Doing random r/w test", true, true},
}

func init() {
	workload.Register(&workload.Spec{
		Type:    "disk.sysbench_fileio",
		Summary: "sysbench fileio: synchronous file I/O on files in the data directory (S3's disk test)",
		Params: []workload.Param{
			workload.P("file_test_mode", workload.Enum, "rndrw", "access pattern (--file-test-mode)").OneOf("seqwr", "seqrd", "rndrd", "rndwr", "rndrw"),
			workload.P("file_total_size", workload.Size, "256MiB", "total size of the 128 test files (--file-total-size), created untimed before the run").Range(1<<20, 1<<40),
			workload.P("file_block_size", workload.Size, "16KiB", "bytes per request (--file-block-size)").Range(512, 64<<20),
			workload.P("duration", workload.Duration, "5s", "measured time (--time); sysbench takes whole seconds, so it is rounded up").Range(1, 86400),
			workload.P("threads", workload.Int, "1", "worker threads (--threads)").Range(1, 1024),
		},
		Metrics: []workload.Metric{
			{Name: "read_mbs", Unit: "MB/s", Better: result.Higher, Doc: "bytes read per second (MB = 10^6 bytes, like disk.fio and disk.bonnie): sysbench's MiB/s × 2^20 ÷ 10^6; read modes and rndrw only"},
			{Name: "written_mbs", Unit: "MB/s", Better: result.Higher, Doc: "bytes written per second (MB = 10^6 bytes): sysbench's MiB/s × 2^20 ÷ 10^6; write modes and rndrw only"},
			{Name: "ops_per_sec", Unit: "ops/s", Better: result.Higher, Doc: "reads/s + writes/s + fsyncs/s"},
			{Name: "latency_avg", Unit: "ms", Better: result.Lower, Doc: "mean time of one request (read, write or fsync): latency sum ÷ events"},
			{Name: "latency_p95", Unit: "ms", Better: result.Lower, Doc: "95th percentile time of one request, from sysbench's latency histogram", Combine: workload.PairsOnly},
		},
		Tools: []workload.Tool{sysbenchTool},
		Run:   map[string]workload.RunFunc{workload.Main: runSysbenchFileio},
		Smoke: map[string]string{"duration": "1s", "file_total_size": "16MiB"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("its duration in whole seconds + file_total_size bytes written first at %g GB/s", diskRate/1e9),
				Time:  fileioTime,
			},
		},
	})
}

// fileioTime is the dry run's estimate of a trial: the files prepared,
// then the measured run, whole seconds.
func fileioTime(p workload.Values, _ int) (time.Duration, bool) {
	prepare := float64(sbFileBytes(p.Int("file_total_size"), p.Int("file_block_size"))) / diskRate
	return time.Duration(sysbenchSeconds(p.Duration("duration")))*time.Second + time.Duration(prepare*float64(time.Second)), true
}

// sbFileBytes is what `sysbench fileio prepare` writes: the total split
// over 128 files, each rounded up to whole blocks.
func sbFileBytes(total, block int64) int64 {
	per := (total + sbFileNum - 1) / sbFileNum
	per = (per + block - 1) / block * block
	return per * sbFileNum
}

// sbCommonArgs are the arguments of prepare, run and cleanup. sysbench is
// given the size prepare really writes (sbFileBytes), not the one asked
// for: with a file size that is not a whole number of blocks, `run` makes
// the request at each file's end a short one (sysbench clips it to the
// file), so bytes per second fall below requests per second × block size
// — 1.6% for 64MB in 16KiB blocks — and the run skips the files' last
// partial block that prepare wrote. With whole blocks every request is
// one block.
func sbCommonArgs(total, block int64) []string {
	return []string{"fileio",
		"--file-num=" + strconv.Itoa(sbFileNum),
		"--file-total-size=" + strconv.FormatInt(sbFileBytes(total, block), 10),
		"--file-block-size=" + strconv.FormatInt(block, 10),
	}
}

// sbRatesAgree reports whether sysbench's printed requests/s and MiB/s
// can come from the same count of whole-block requests over the same time
// (sysbench divides both counters by one time). Each is printed with two
// decimals, so each is off by up to 0.005 from the true rate; the request
// rate's error grows by the block size, which with blocks of megabytes
// and few requests is more than any fixed percentage.
func sbRatesAgree(ops, mibs float64, block int64) bool {
	blockMiB := float64(block) / (1 << 20)
	return math.Abs(mibs-ops*blockMiB) <= 0.005+0.005*blockMiB+1e-9*mibs
}

var sbPrepared = regexp.MustCompile(`(?m)^([0-9]+) bytes written in `)

func runSysbenchFileio(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(sysbenchTool)
	if err != nil {
		return nil, "", err
	}
	dir, err := dataDir(env)
	if err != nil {
		return nil, "", err
	}
	defer emptyDataDir(dir)
	total, block := p.Int("file_total_size"), p.Int("file_block_size")
	if total < sbFileNum*block {
		return nil, "", fmt.Errorf("file_total_size %s is less than 128 files of one %s block each: raise it or lower file_block_size",
			vocab.Size(total), vocab.Size(block))
	}
	mode := p.String("file_test_mode")
	secs := sysbenchSeconds(p.Duration("duration"))
	common := sbCommonArgs(total, block)
	if want := sbFileBytes(total, block); want != total {
		diskLog(env, "sysbench: file_total_size %d is not 128 files of whole %d-byte blocks: the files hold %d bytes, and sysbench is told so", total, block, want)
	}
	with := func(extra ...string) []string { return append(append([]string{}, common...), extra...) }

	prep, raw, err := runToolIn(ctx, dir, path, with("prepare")...)
	if err != nil {
		return nil, raw, fmt.Errorf("preparing the test files: %w", err)
	}
	want := sbFileBytes(total, block)
	m := sbPrepared.FindStringSubmatch(string(prep))
	if m == nil || m[1] != strconv.FormatInt(want, 10) {
		return nil, raw, fmt.Errorf("sysbench prepare did not report writing the %d bytes of the test files", want)
	}

	cctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+5*time.Minute)
	defer cancel()
	stdout, raw, runErr := runToolIn(cctx, dir, path, with(
		"--file-test-mode="+mode,
		"--threads="+p.String("threads"),
		"--time="+strconv.Itoa(secs),
		"--events=0", "--percentile=95", "--histogram=on",
		"run")...)
	if runErr != nil {
		return nil, raw, runErr
	}
	obs, raw, err := parseSysbenchFileio(string(stdout), mode, block)
	if err != nil {
		return nil, raw, err
	}
	if _, craw, err := runToolIn(ctx, dir, path, with("cleanup")...); err != nil {
		return nil, craw, fmt.Errorf("removing the test files: %w", err)
	}
	return obs, "", nil
}

// parseSysbenchFileio checks and converts the report of `sysbench fileio
// run`. On any failure the whole output is returned for the record.
func parseSysbenchFileio(out, mode string, block int64) ([]result.Observation, string, error) {
	fail := func(err error) ([]result.Observation, string, error) { return nil, out, err }
	m, ok := sbFileModes[mode]
	if !ok {
		return fail(fmt.Errorf("unknown file_test_mode %q", mode))
	}
	r := parseSysbench(out)
	if !r.has(m.doing) {
		return fail(fmt.Errorf("sysbench output does not say %q: not the test asked for", m.doing))
	}
	var err error
	get := func(section, key string) float64 {
		if err != nil {
			return 0
		}
		var v float64
		v, err = r.num(section, key, "")
		return v
	}
	reads := get("File operations", "reads/s")
	writes := get("File operations", "writes/s")
	fsyncs := get("File operations", "fsyncs/s")
	readMiB := get("Throughput", "read, MiB/s")
	writeMiB := get("Throughput", "written, MiB/s")
	if err != nil {
		return fail(err)
	}
	// Both rates come from the same counters and time, and every request
	// is one block (sbCommonArgs): bytes per second must be requests per
	// second times the block size, to sysbench's rounding (which also
	// checks that sysbench used the block size asked for).
	for _, c := range []struct {
		what      string
		ops, mibs float64
	}{{"read", reads, readMiB}, {"written", writes, writeMiB}} {
		if !sbRatesAgree(c.ops, c.mibs, block) {
			return fail(fmt.Errorf("sysbench prints %s %.2f MiB/s, but %.2f requests/s of %d bytes are %.3f MiB/s, more apart than its rounding to two decimals allows (requests of another size?)",
				c.what, c.mibs, c.ops, block, c.ops*float64(block)/(1<<20)))
		}
	}
	if m.read && (reads <= 0 || readMiB <= 0) {
		return fail(fmt.Errorf("%s read nothing (reads/s %.2f, read MiB/s %.2f)", mode, reads, readMiB))
	}
	if m.write && (writes <= 0 || writeMiB <= 0) {
		return fail(fmt.Errorf("%s wrote nothing (writes/s %.2f, written MiB/s %.2f)", mode, writes, writeMiB))
	}
	_, events, err := r.general()
	if err != nil {
		return fail(err)
	}
	avg, p95, err := r.latency(events)
	if err != nil {
		return fail(err)
	}
	var obs []result.Observation
	// MB/s, as every *_mbs metric: sysbench's MiB are 2^20 bytes.
	const mibInMB = (1 << 20) / 1e6
	if m.read {
		obs = append(obs, result.Observation{Metric: "read_mbs", Value: readMiB * mibInMB, Unit: "MB/s", Better: result.Higher})
	}
	if m.write {
		obs = append(obs, result.Observation{Metric: "written_mbs", Value: writeMiB * mibInMB, Unit: "MB/s", Better: result.Higher})
	}
	return append(obs,
		result.Observation{Metric: "ops_per_sec", Value: reads + writes + fsyncs, Unit: "ops/s", Better: result.Higher},
		result.Observation{Metric: "latency_avg", Value: avg, Unit: "ms", Better: result.Lower},
		result.Observation{Metric: "latency_p95", Value: p95, Unit: "ms", Better: result.Lower},
	), "", nil
}
