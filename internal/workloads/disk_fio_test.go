package workloads

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParseFio(t *testing.T) {
	obs, err := parseFio([]byte(readTestdata(t, "fio", "ok_direct.json")), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := obsMap(obs)
	want := map[string]float64{
		"seq_write_mbs":      1716.419047,
		"seq_read_mbs":       1315.636817,
		"rand_read_iops":     79959.040959,
		"rand_write_iops":    92676.294821,
		"rand_read_lat_p50":  0.1792,
		"rand_read_lat_p99":  0.610304,
		"rand_write_lat_p50": 0.136192,
		"rand_write_lat_p99": 0.59392,
	}
	if len(m) != len(want) {
		t.Errorf("metrics %v, want %d", m, len(want))
	}
	for k, v := range want {
		if !near(m[k], v, 1e-9*v) {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// Buffered on ramfs, where O_DIRECT is refused.
	if _, err := parseFio([]byte(readTestdata(t, "fio", "ok_buffered_ramfs.json")), nil); err != nil {
		t.Errorf("buffered: %v", err)
	}
	// fio prints notes on stdout before the JSON.
	noted := "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n" + readTestdata(t, "fio", "ok_direct.json")
	if _, err := parseFio([]byte(noted), nil); err != nil {
		t.Errorf("with notes: %v", err)
	}
}

func TestParseFioFailures(t *testing.T) {
	good := readTestdata(t, "fio", "ok_direct.json")
	exit1 := errors.New("exit status 1")
	for name, c := range map[string]struct {
		out       string
		runErr    error
		wantError string
	}{
		"direct refused": {readTestdata(t, "fio", "direct_refused.json"), exit1, "seq_write failed with error 22 (invalid argument)"},
		"job error":      {readTestdata(t, "fio", "enospc.json"), exit1, "failed with error 28 (no space left on device)"},
		"truncated":      {good[:len(good)/2], nil, "not the JSON expected"},
		"no json":        {"fio: failed parsing ioengine=nonesuch\n", exit1, "exit status 1"},
		"no json, ok":    {"", nil, "no JSON"},
		"job missing":    {strings.Replace(good, `"jobname" : "rand_write"`, `"jobname" : "other"`, 1), nil, "no job rand_write"},
		"job twice":      {strings.Replace(good, `"jobname" : "rand_write"`, `"jobname" : "seq_write"`, 1), nil, "seq_write twice"},
		"nothing read":   {strings.Replace(good, `"io_bytes" : 1332740096`, `"io_bytes" : 0`, 1), nil, "seq_read transferred 0 bytes"},
		"inconsistent":   {strings.Replace(good, `"bw_bytes" : 1716419047`, `"bw_bytes" : 2716419047`, 1), nil, "disagrees with io_bytes"},
		"no percentile":  {strings.Replace(good, `"99.000000" : 610304`, `"98.000000" : 610304`, 1), nil, "rand_read has no clat_ns percentile 99.000000"},
		"exit but fine":  {good, exit1, "exited with an error"},
	} {
		obs, err := parseFio([]byte(c.out), c.runErr)
		if err == nil || !strings.Contains(err.Error(), c.wantError) {
			t.Errorf("%s: got %v (%v), want an error with %q", name, err, obsMap(obs), c.wantError)
		}
	}
	if !fioDirectRefused(readTestdata(t, "fio", "direct_refused.stderr")) {
		t.Error("fio's O_DIRECT complaint not recognised")
	}
	if fioDirectRefused(readTestdata(t, "fio", "enospc.stderr")) {
		t.Error("ENOSPC taken for an O_DIRECT refusal")
	}
}

func TestFioJobFile(t *testing.T) {
	p := values(t, "disk.fio", map[string]string{"size": "16MiB", "runtime": "1500ms", "iodepth": "8"})
	job := fioJobFile("/data/a:b", p, fioSetup{engine: "libaio", direct: true})
	for _, want := range []string{`directory=/data/a\:b`, "size=16777216", "ioengine=libaio", "iodepth=8", "direct=1", "runtime=1500ms", "time_based=1",
		"[seq_write]\nstonewall\nrw=write\nbs=1048576\nend_fsync=1", "[rand_read]\nstonewall\nrw=randread\nbs=4096\n"} {
		if !strings.Contains(job, want) {
			t.Errorf("job file lacks %q:\n%s", want, job)
		}
	}
	if n := strings.Count(job, "stonewall"); n != 4 {
		t.Errorf("%d stonewalls, want 4", n)
	}
	job = fioJobFile("/d", p, fioSetup{engine: "psync", direct: false})
	if !strings.Contains(job, "ioengine=psync\niodepth=1\ndirect=0") {
		t.Errorf("psync job file:\n%s", job)
	}
}

func TestFioRuns(t *testing.T) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("fio not installed (scripts/setup.sh installs it)")
	}
	p := values(t, "disk.fio", map[string]string{"size": "16MiB", "runtime": "1s"})
	obs, raw, err := runFio(context.Background(), p, toolEnv(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	m := obsMap(obs)
	t.Logf("%v", m)
	for _, k := range []string{"seq_write_mbs", "seq_read_mbs", "rand_read_iops", "rand_write_iops", "rand_read_lat_p50", "rand_read_lat_p99", "rand_write_lat_p50", "rand_write_lat_p99"} {
		if m[k] <= 0 {
			t.Errorf("%s = %v", k, m[k])
		}
	}
	if m["rand_read_lat_p99"] < m["rand_read_lat_p50"] || m["rand_write_lat_p99"] < m["rand_write_lat_p50"] {
		t.Errorf("p99 below p50: %v", m)
	}
	// The test's temporary directory is on the machine's disk (ext4 here),
	// which accepts O_DIRECT.
	var st syscall.Statfs_t
	if syscall.Statfs(os.TempDir(), &st) == nil && st.Type == 0xEF53 && m["direct"] != 1 {
		t.Errorf("direct = %v on ext4", m["direct"])
	}
}

// On a filesystem that refuses O_DIRECT the trial runs buffered and says so.
func TestFioFallsBackToBuffered(t *testing.T) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("fio not installed (scripts/setup.sh installs it)")
	}
	dir := filepath.Join(t.TempDir(), "ramfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// ramfs refuses O_DIRECT at open (EINVAL) on every kernel.
	if err := syscall.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount a ramfs (needs root): %v", err)
	}
	defer syscall.Unmount(dir, 0)
	env := toolEnv(t)
	env.DataDir = dir
	p := values(t, "disk.fio", map[string]string{"size": "4MiB", "runtime": "200ms"})
	obs, raw, err := runFio(context.Background(), p, env)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if m := obsMap(obs); m["direct"] != 0 || m["seq_write_mbs"] <= 0 || m["rand_read_iops"] <= 0 {
		t.Errorf("got %v, want direct 0 and results", m)
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("files left on the ramfs: %v", left)
	}
}
