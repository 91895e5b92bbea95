package workloads

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

func TestParseSysbenchFileio(t *testing.T) {
	for _, c := range []struct {
		mode          string
		read, written float64 // MiB/s as printed; 0 = not reported
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
		if r, ok := m["read_mbs"]; ok != (c.read > 0) || r != c.read {
			t.Errorf("%s: read_mbs %v (reported %v), want %v", c.mode, r, ok, c.read)
		}
		if w, ok := m["written_mbs"]; ok != (c.written > 0) || w != c.written {
			t.Errorf("%s: written_mbs %v (reported %v), want %v", c.mode, w, ok, c.written)
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
	for _, mode := range []string{"rndrw", "seqrd"} {
		p := values(t, "disk.sysbench_fileio", map[string]string{"duration": "1s", "file_total_size": "16MiB", "file_test_mode": mode})
		obs, raw, err := runSysbenchFileio(context.Background(), p, toolEnv(t))
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, raw)
		}
		m := obsMap(obs)
		t.Logf("%s: %v", mode, m)
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
