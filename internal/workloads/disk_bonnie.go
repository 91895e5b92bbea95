package workloads

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var bonnieTool = workload.Tool{Binary: "bonnie++", Package: "bonnie++"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "disk.bonnie",
		Summary: "bonnie++: block write, rewrite, block read and random seeks on one file in the data directory (S0's and S3's disk test)",
		Params: []workload.Param{
			workload.P("size", workload.Size, "4GiB", "size of the test file (-s), rounded down to whole MiB; every phase must take 0.5 s or bonnie++ cannot measure it, so it must be well above what the page cache can serve in that time (S0: 2× RAM, S3: 4 GB)").Range(1<<20, 1<<40),
			workload.P("ram", workload.Size, "0", "RAM bonnie++ assumes (-r), rounded down to whole MiB; it refuses a size under twice this. 0 passes size/2, so any size runs").Range(0, 1<<40),
			workload.P("files", workload.Int, "0", "small-file test (-n): this many × 1024 files created, stat'ed and deleted; 0 skips it").Range(0, 1024),
			workload.P("direct", workload.Bool, "false", "-D: bonnie++ creates the test file with O_DIRECT, so block output bypasses the page cache. bonnie++ (2.00a) reopens the file without it for rewrite and block input, which therefore still need a file the cache cannot serve in 0.5 s. Where the filesystem refuses O_DIRECT the trial runs without and reports direct = 0"),
		},
		Metrics: []workload.Metric{
			{Name: "block_output_mbs", Unit: "MB/s", Better: result.Higher, Doc: "sequential block write; bonnie++'s K/sec × 1024 ÷ 10^6"},
			{Name: "rewrite_mbs", Unit: "MB/s", Better: result.Higher, Doc: "read, modify and write back each block; K/sec × 1024 ÷ 10^6"},
			{Name: "block_input_mbs", Unit: "MB/s", Better: result.Higher, Doc: "sequential block read; K/sec × 1024 ÷ 10^6"},
			{Name: "random_seeks_per_sec", Unit: "seeks/s", Better: result.Higher, Doc: "random seeks with a read (and a write-back every tenth) by 5 processes; absent when seeks_timed is 0"},
			{Name: "seeks_timed", Unit: "bool", Better: result.Higher, Doc: "1 when bonnie++ timed the random seeks; 0 when its fixed 8000 seeks took under its 0.5 s resolution (it prints +++++) and random_seeks_per_sec is left out rather than invented — a flag, not a score"},
			{Name: "seq_create_per_sec", Unit: "files/s", Better: result.Higher, Doc: "files created in name order; only when files > 0"},
			{Name: "rand_create_per_sec", Unit: "files/s", Better: result.Higher, Doc: "files created in random order; only when files > 0"},
			{Name: "direct", Unit: "bool", Better: result.Higher, Doc: "1 when bonnie++ ran with -D (O_DIRECT for block output), 0 without (not asked, or refused by the filesystem): a flag, not a score"},
		},
		Tools: []workload.Tool{bonnieTool},
		Run:   map[string]workload.RunFunc{workload.Main: runBonnie},
		// Smaller files are read back from the page cache in under 0.5 s
		// on the project's machines, which bonnie++ refuses to time.
		Smoke: map[string]string{"size": "4GiB"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("4 × size bytes at %g GB/s, written, rewritten and read, + %d s of seeks + files × 2048 files created at %d a second",
					diskRate/1e9, bonnieFixed, bonnieFileRate),
				Time: bonnieTime,
			},
		},
	})
}

// bonnieTime is the dry run's estimate of a trial: the file written, read
// and written back, read; the small files created in order and at random.
func bonnieTime(p workload.Values, _ int) (time.Duration, bool) {
	s := 4*float64(p.Int("size"))/diskRate + bonnieFixed + float64(2048*p.Int("files"))/bonnieFileRate
	return time.Duration(s * float64(time.Second)), true
}

// bonnie++ CSV (-q prints it alone on stdout; the human table goes to
// stderr). Format 1.98 (bonnie++ 1.98, 2.00) — a line from this machine:
//
//	1.98,2.00a,ctrbench,1,1795312849,4G,,8192,5,,,488011,85,1814624,65,,,3076852,99,4820,35,,,,,,,,,,,,,,,,,,,30777us,6397us,,940us,27688us,,,,,,
//
//	0 format version     5 file size ("4G", "1536M")   9/10 per-char write, %CPU (empty: -f)
//	1 bonnie++ version   6 chunk size (always empty)  11/12 block write K/sec, %CPU
//	2 machine name (-m)  7 seeks (8192)               13/14 rewrite K/sec, %CPU
//	3 concurrency        8 seeker processes (5)       15/16 per-char read, %CPU (empty: -f)
//	4 seed                                            17/18 block read K/sec, %CPU
//	                                                  19/20 random seeks/s, %CPU
//	21 files (×1024)  22 max size  23 min size  24 directories  25 file chunk size
//	26/27 sequential create/s   28/29 sequential stat/s   30/31 sequential delete/s
//	32/33 random create/s       34/35 random stat/s       36/37 random delete/s
//	38-49 latencies of the twelve tests, in the same order
//
// Format 1.97 (bonnie++ 1.97) lacks fields 7 and 8; everything after
// field 6 sits two places earlier. K is 1024 bytes (bonnie++(8): "K/sec
// means a multiple of 1024 bytes per second"). A test that took under
// 0.5 s prints "+++++" instead of a number.
type bonnieLayout struct {
	fields                                          int
	blockOut, rewrite, blockIn, seeks, files, seqCr int
	randCr                                          int
}

var bonnieLayouts = map[string]bonnieLayout{
	"1.98": {fields: 50, blockOut: 11, rewrite: 13, blockIn: 17, seeks: 19, files: 21, seqCr: 26, randCr: 32},
	"1.97": {fields: 48, blockOut: 9, rewrite: 11, blockIn: 15, seeks: 17, files: 19, seqCr: 24, randCr: 30},
}

const bonnieSizeField = 5

func runBonnie(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(bonnieTool)
	if err != nil {
		return nil, "", err
	}
	dir, err := dataDir(env)
	if err != nil {
		return nil, "", err
	}
	defer emptyDataDir(dir)
	sizeMiB := p.Int("size") >> 20
	ramMiB := p.Int("ram") >> 20
	if ramMiB == 0 {
		ramMiB = sizeMiB / 2
	} else if sizeMiB < 2*ramMiB {
		return nil, "", fmt.Errorf("size %dMiB is less than twice ram %dMiB, which bonnie++ refuses: raise size or lower ram", sizeMiB, ramMiB)
	}
	files := p.Int("files")
	direct := p.Bool("direct")
	if direct {
		ok, err := directIOAccepted(dir)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			diskLog(env, "disk.bonnie: the data directory's filesystem refuses O_DIRECT: running without -D (direct = 0)")
			direct = false
		}
	}
	diskLog(env, "disk.bonnie: direct=%d", b2i(direct))
	args := bonnieArgs(dir, sizeMiB, ramMiB, files, direct)
	var out, errb bytes.Buffer
	cmd := toolCommand(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	raw := strings.TrimSpace(out.String() + "\n" + errb.String())
	if runErr != nil {
		return nil, raw, fmt.Errorf("bonnie++ %s: %w: %s", strings.Join(args, " "), runErr, bonnieComplaint(errb.String()))
	}
	obs, err := parseBonnie(out.String(), sizeMiB, files)
	if err != nil {
		return nil, raw, err
	}
	return withBonnieDirect(obs, direct), "", nil
}

// bonnieArgs is bonnie++'s command line.
func bonnieArgs(dir string, sizeMiB, ramMiB, files int64, direct bool) []string {
	args := []string{"-d", dir, "-s", strconv.FormatInt(sizeMiB, 10), "-r", strconv.FormatInt(ramMiB, 10),
		"-n", strconv.FormatInt(files, 10),
		// bonnie++ insists on -u when root; numeric ids need no
		// /etc/passwd, which the scratch image lacks.
		"-u", fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid()),
		"-m", "ctrbench", // a fixed name: the CSV cannot be misread whatever the hostname holds
		"-f", // no per-character tests: S0 and S3 report block rates, and getc/putc take minutes
		"-q"}
	if direct {
		args = append(args, "-D")
	}
	return args
}

// withBonnieDirect records whether the run used -D: cells that differ in
// it measured different things.
func withBonnieDirect(obs []result.Observation, direct bool) []result.Observation {
	return append(obs, result.Observation{Metric: "direct", Value: float64(b2i(direct)), Unit: "bool", Better: result.Higher})
}

// bonnieComplaint is what bonnie++ said before printing its usage text.
func bonnieComplaint(stderr string) string {
	if i := strings.Index(stderr, "usage:"); i >= 0 {
		stderr = stderr[:i]
	}
	return lastLine(stderr)
}

// parseBonnie finds the CSV line in bonnie++'s stdout, checks it is the
// run asked for, and converts the rates.
func parseBonnie(stdout string, sizeMiB, files int64) ([]result.Observation, error) {
	f, lay, err := bonnieFields(stdout)
	if err != nil {
		return nil, err
	}
	if got, err := bonnieMiB(f[bonnieSizeField]); err != nil || got != sizeMiB {
		return nil, fmt.Errorf("bonnie++ tested a file of %q, not the %dMiB asked for", f[bonnieSizeField], sizeMiB)
	}
	obs, err := bonnieBlockRates(f, lay)
	if err != nil {
		return nil, err
	}
	return bonnieFileRates(obs, f, lay, files)
}

// bonnieFields finds the one CSV result line in bonnie++'s stdout and
// splits it into fields, checking its format is one ctrbench reads and
// has that format's number of fields.
func bonnieFields(stdout string) ([]string, bonnieLayout, error) {
	var line string
	n := 0
	for _, l := range strings.Split(stdout, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "1.9") && strings.Count(l, ",") > 40 {
			line = l
			n++
		}
	}
	if n != 1 {
		return nil, bonnieLayout{}, fmt.Errorf("bonnie++ printed %d CSV result lines, want 1", n)
	}
	f := strings.Split(line, ",")
	lay, ok := bonnieLayouts[f[0]]
	if !ok {
		return nil, bonnieLayout{}, fmt.Errorf("bonnie++ CSV format %q is not one ctrbench reads (1.97, 1.98)", f[0])
	}
	if len(f) != lay.fields {
		return nil, bonnieLayout{}, fmt.Errorf("bonnie++ CSV format %s has %d fields, want %d", f[0], len(f), lay.fields)
	}
	return f, lay, nil
}

// bonnieRate reads one test's rate from a field of bonnie++'s CSV line.
// An empty field is a test that did not run; +++++ is one too fast to
// time, whose error says which parameter (raise: size or files) to
// raise.
func bonnieRate(f []string, field int, test, raise string) (float64, error) {
	v := f[field]
	switch v {
	case "":
		return 0, fmt.Errorf("bonnie++ reported nothing for %s: the test did not run", test)
	case "+++++", "++++++":
		hint := ""
		if raise == "size" {
			// A cgroup's page cache is bounded by its memory limit.
			hint = ", or give the trial less page cache with the memory factor"
		}
		return 0, fmt.Errorf("%s too fast to measure: raise %s%s (bonnie++ prints +++++ for a test that took under 0.5 s)", test, raise, hint)
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("bonnie++ reported %q for %s, not a number", v, test)
	}
	return x, positive("bonnie++ "+test, x)
}

// bonnieBlockRates converts the block tests' rates (output, rewrite,
// input, in KiB/s) to MB/s and the random seeks to seeks/s, with
// seeks_timed saying whether the seeks were timed at all.
func bonnieBlockRates(f []string, lay bonnieLayout) ([]result.Observation, error) {
	var obs []result.Observation
	for _, m := range []struct {
		field      int
		test, name string
		kib        bool
	}{
		{lay.blockOut, "block output", "block_output_mbs", true},
		{lay.rewrite, "rewrite", "rewrite_mbs", true},
		{lay.blockIn, "block input", "block_input_mbs", true},
		{lay.seeks, "random seeks", "random_seeks_per_sec", false},
	} {
		// bonnie++ does a fixed number of seeks, whatever the file size:
		// on a fast disk they may finish under its timer's resolution.
		// The trial keeps its throughputs and says the seeks were not
		// timed; block tests under 0.5 s mean a cached file and fail.
		if m.name == "random_seeks_per_sec" && strings.HasPrefix(f[m.field], "+++++") {
			obs = append(obs, result.Observation{Metric: "seeks_timed", Value: 0, Unit: "bool", Better: result.Higher})
			continue
		}
		x, err := bonnieRate(f, m.field, m.test, "size")
		if err != nil {
			return nil, err
		}
		if m.name == "random_seeks_per_sec" {
			obs = append(obs, result.Observation{Metric: "seeks_timed", Value: 1, Unit: "bool", Better: result.Higher})
		}
		if m.kib {
			obs = append(obs, result.Observation{Metric: m.name, Value: x * 1024 / 1e6, Unit: "MB/s", Better: result.Higher})
		} else {
			obs = append(obs, result.Observation{Metric: m.name, Value: x, Unit: "seeks/s", Better: result.Higher})
		}
	}
	return obs, nil
}

// bonnieFileRates appends the small-file tests' create rates to obs when
// files (×1024) were asked for, checking bonnie++ ran that test exactly
// when it was asked to and with that many files.
func bonnieFileRates(obs []result.Observation, f []string, lay bonnieLayout, files int64) ([]result.Observation, error) {
	if files == 0 {
		if f[lay.files] != "" {
			return nil, fmt.Errorf("bonnie++ ran the small-file test (%s ×1024 files) though files is 0", f[lay.files])
		}
		return obs, nil
	}
	if f[lay.files] != strconv.FormatInt(files, 10) {
		return nil, fmt.Errorf("bonnie++ tested %q ×1024 files, not the %d asked for", f[lay.files], files)
	}
	for _, m := range []struct {
		field      int
		test, name string
	}{{lay.seqCr, "sequential create", "seq_create_per_sec"}, {lay.randCr, "random create", "rand_create_per_sec"}} {
		x, err := bonnieRate(f, m.field, m.test, "files")
		if err != nil {
			return nil, err
		}
		obs = append(obs, result.Observation{Metric: m.name, Value: x, Unit: "files/s", Better: result.Higher})
	}
	return obs, nil
}

// bonnieMiB parses bonnie++'s file size field ("64M", "4G") into MiB.
func bonnieMiB(s string) (int64, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("size %q", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q", s)
	}
	switch s[len(s)-1] {
	case 'M':
		return n, nil
	case 'G':
		return n << 10, nil
	case 'T':
		return n << 20, nil
	}
	return 0, fmt.Errorf("size %q", s)
}
