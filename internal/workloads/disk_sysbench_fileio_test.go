package workloads

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestParseSysbenchFileio(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		mode          string
		read, written float64 // MiB/s as printed; 0 = not reported (the metrics are MB/s)
		ops           float64
		sum           float64
		events        float64
	}{
		{"rndrw", 42.47, 28.31, 2718.21 + 1812.14 + 5844.16, 994.32, 10406},
		{"seqwr", 0, 173.38, 11096.08 + 14320.88, 988.37, 25527},
		{"seqrd", 10192.49, 0, 652319.05, 867.44, 654253},
		{"rndrd", 10929.16, 0, 699466.16, 864.87, 701762},
		{"rndwr", 0, 120.05, 7683.14 + 9916.18, 993.03, 17739},
	} {
		out := readTestdata(t, "sysbench", "fileio_"+c.mode+".txt")
		obs, raw, err := parseSysbenchFileio(out, c.mode, 16384)
		if err != nil {
			t.Errorf("%s: %v\n%s", c.mode, err, raw)
			continue
		}
		m := obsMap(obs)
		if r, ok := m["read_mbs"]; ok != (c.read > 0) || !near(r, c.read*mib/1e6, 1e-9) {
			t.Errorf("%s: read_mbs %v (reported %v), want %v MiB/s in MB/s", c.mode, r, ok, c.read)
		}
		if w, ok := m["written_mbs"]; ok != (c.written > 0) || !near(w, c.written*mib/1e6, 1e-9) {
			t.Errorf("%s: written_mbs %v (reported %v), want %v MiB/s in MB/s", c.mode, w, ok, c.written)
		}
		for _, o := range obs {
			if strings.HasSuffix(o.Metric, "_mbs") && o.Unit != "MB/s" {
				t.Errorf("%s: %s in %s", c.mode, o.Metric, o.Unit)
			}
		}
		if !near(m["ops_per_sec"], c.ops, 1e-6) {
			t.Errorf("%s: ops_per_sec %v, want %v", c.mode, m["ops_per_sec"], c.ops)
		}
		if !near(m["latency_avg"], c.sum/c.events, 1e-12) || m["latency_p95"] <= 0 {
			t.Errorf("%s: latency %v", c.mode, m)
		}
	}
	// Sub-10 µs requests print as 0.00 ms; the histogram still resolves them.
	obs, _, _ := parseSysbenchFileio(readTestdata(t, "sysbench", "fileio_rndrd.txt"), "rndrd", 16384)
	if m := obsMap(obs); m["latency_p95"] < 0.001 || m["latency_p95"] > 0.005 {
		t.Errorf("rndrd p95 %v ms, want the histogram's few µs", m["latency_p95"])
	}
}

func TestParseSysbenchFileioFailures(t *testing.T) {
	good := readTestdata(t, "sysbench", "fileio_rndrw.txt")
	for name, c := range map[string]struct {
		out, mode string
		block     int64
		wantError string
	}{
		"not prepared":   {readTestdata(t, "sysbench", "fileio_not_prepared.txt"), "rndrd", 16384, `no "reads/s"`},
		"truncated":      {good[:strings.Index(good, "Throughput:")], "rndrw", 16384, `no "read, MiB/s"`},
		"other mode":     {good, "seqrd", 16384, `"Doing sequential read test"`},
		"other block":    {good, "rndrw", 4096, "requests/s of 4096 bytes"},
		"partial blocks": {readTestdata(t, "sysbench", "fileio_rndrw_partial_blocks.txt"), "rndrw", 16384, "more apart than its rounding"},
		"read nothing":   {strings.NewReplacer("2718.21", "0.00", "42.47", "0.00").Replace(good), "rndrw", 16384, "read nothing"},
		"mangled number": {strings.Replace(good, "2718.21", "27l8.21", 1), "rndrw", 16384, "not a number"},
		"no histogram":   {strings.Replace(good, "Latency histogram", "Latency graph", 1), "rndrw", 16384, "no latency histogram"},
		"unknown mode":   {good, "seqrewr", 16384, "unknown file_test_mode"},
		"empty":          {"", "rndrw", 16384, "does not say"},
	} {
		_, raw, err := parseSysbenchFileio(c.out, c.mode, c.block)
		if err == nil || !strings.Contains(err.Error(), c.wantError) {
			t.Errorf("%s: got %v, want an error with %q", name, err, c.wantError)
		}
		if raw != c.out {
			t.Errorf("%s: raw output not kept", name)
		}
	}
}

// sysbench prints requests/s and MiB/s with two decimals each: the
// cross-check allows for both roundings, which with large blocks is more
// than 1% (one 64MiB write in 2.9 s prints 0.34 writes/s and 22.07 MiB/s,
// while 0.34 × 64 = 21.76).
func TestSbRatesAgree(t *testing.T) {
	for _, c := range []struct {
		ops, mibs float64
		block     int64
		want      bool
	}{
		{0.34, 22.07, 64 << 20, true},      // 1/2.9 s: both printed values rounded
		{2718.21, 42.47, 16384, true},      // fileio_rndrw.txt
		{652319.05, 10192.49, 16384, true}, // fileio_seqrd.txt: 0.005 apart, the MiB/s rounding alone
		{0.34, 22.50, 64 << 20, false},     // beyond both roundings
		{2718.21, 42.40, 16384, false},     // 0.16%, but 0.07 MiB/s: more than rounding
		{3068.60, 47.09, 16384, false},     // requests shorter than a block (a file size not a whole number of blocks)
		{2718.21, 42.47, 4096, false},      // another block size
	} {
		if got := sbRatesAgree(c.ops, c.mibs, c.block); got != c.want {
			t.Errorf("sbRatesAgree(%v/s, %v MiB/s, %d B) = %v, want %v", c.ops, c.mibs, c.block, got, c.want)
		}
	}
}

// sbRunSize is the total given to sysbench: the files prepare writes,
// each a whole number of blocks.
func TestSbRunArgs(t *testing.T) {
	args := sbCommonArgs(64e6, 16384)
	if !slices.Contains(args, "--file-total-size=65011712") {
		t.Errorf("64MB in 16KiB blocks: %v, want --file-total-size=65011712 (128 files of 31 blocks)", args)
	}
}

func TestSbFileBytes(t *testing.T) {
	// What sysbench 1.0.20 printed after "prepare" for these sizes.
	for _, c := range []struct{ total, block, want int64 }{
		{16 << 20, 16384, 16 << 20},
		{100000000, 16384, 100663296},
		{256 << 20, 4096, 256 << 20},
	} {
		if got := sbFileBytes(c.total, c.block); got != c.want {
			t.Errorf("sbFileBytes(%d, %d) = %d, want %d", c.total, c.block, got, c.want)
		}
	}
}

func TestSysbenchFileioRuns(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench not installed (scripts/setup.sh installs it)")
	}
	// 64MB (10^6) is not 128 files of whole 16KiB blocks: sysbench, given
	// it as it is, makes every file's last request a short one, and its
	// MiB/s falls 1.6% below requests/s × block size.
	for _, c := range []struct{ mode, size string }{{"rndrw", "16MiB"}, {"seqrd", "16MiB"}, {"rndrw", "64MB"}, {"seqrd", "64MB"}} {
		mode := c.mode
		p := values(t, "disk.sysbench_fileio", map[string]string{"duration": "1s", "file_total_size": c.size, "file_test_mode": mode})
		obs, raw, err := runSysbenchFileio(context.Background(), p, toolEnv(t))
		if err != nil {
			t.Fatalf("%s, %s: %v\n%s", mode, c.size, err, raw)
		}
		m := obsMap(obs)
		t.Logf("%s, %s: %v", mode, c.size, m)
		if m["read_mbs"] <= 0 || m["ops_per_sec"] <= 0 || m["latency_avg"] <= 0 || m["latency_p95"] <= 0 {
			t.Errorf("%s: implausible %v", mode, m)
		}
		if _, ok := m["written_mbs"]; ok != (mode == "rndrw") {
			t.Errorf("%s: written_mbs reported: %v", mode, ok)
		}
	}
	p := values(t, "disk.sysbench_fileio", map[string]string{"file_total_size": "1MiB"})
	if _, _, err := runSysbenchFileio(context.Background(), p, toolEnv(t)); err == nil || !strings.Contains(err.Error(), "less than 128 files") {
		t.Errorf("1MiB over 128 files of 16KiB: got %v", err)
	}
}
