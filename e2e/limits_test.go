package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/runner"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

func meanRows(t *testing.T, src string) map[string]float64 {
	t.Helper()
	rows, _ := runReport[row](t, src)
	mean := map[string]float64{}
	for _, x := range rows {
		k := x.Workload + " " + x.Metric
		if a := x.Cell["neighbour"]; a != "" {
			k = x.Workload + "+" + a + " " + x.Metric
		}
		mean[k] = x.Mean
		mean[x.Cell["platform"]+":"+k] = x.Mean
	}
	return mean
}

// TestEmulatedMachine: "machine: {cpus: 0.5}" puts every container under
// one cgroup of half a core, so a two-thread CPU-bound agent with no limit
// of its own gets about one CPU-second in two seconds, not four.
func TestEmulatedMachine(t *testing.T) {
	requireDocker(t)
	mean := meanRows(t, `name: e2e-machine
seed: 5
repetitions: 1
machine: {cpus: 0.5}
factors:
  platform: [docker, native]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000, threads: 2}}
`)
	for _, p := range []string{"docker", "native"} {
		if v := mean[p+":cpu telemetry.cpu_seconds"]; v < 0.6 || v > 1.4 {
			t.Errorf("%s: cpu_seconds %v in 2 s under a 0.5-core machine, want about 1", p, v)
		}
	}
}

// TestNeighbourTelemetry: a neighbour in its own container has its own
// counters, over the target's window. The neighbour, a CPU-bound loop
// pinned to core 1, can have used at most that core over the span its
// counters cover — the target's measured window, widened by at most a
// quarter second either side (they are read every quarter second) — so its
// CPU time is at most that span: counters read over the neighbour's whole
// life (it starts before the target and stops after it) or in another
// unit would exceed it. How much of its core it got is the machine's
// doing — about 2 s of 2 when nothing else wants core 1, 0.8-1.3 s
// measured with other processes busy, where this test used to ask for 1.4
// — so it need only have had some: a twentieth of the core, which a loop
// that ran throughout gets unless twenty busy processes share its core.
// The bounds are physical, no measured effect is asserted: chance failure
// nil. (The write throttle, once checked here too, is TestWriteThrottle.)
func TestNeighbourTelemetry(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-neighbour-telemetry
seed: 6
repetitions: 1
factors:
  platform: [docker]
  neighbour: [hog]
  packaging: [separate-containers]
  cpuset: ["0"]
  neighbour.cpuset: ["1"]
exclude:
  - {workload: hog}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 5000, threads: 1}}
  - {name: hog, type: cpu.primes, params: {duration: 1s, max_prime: 5000, threads: 1}}
`)
	trials := measured(storedTrials(t, db, id), cellOf(t, cellFactors(t, db, id), map[string]string{"neighbour": "hog"}))
	if len(trials) != 1 {
		t.Fatalf("%d measured trials of the target beside the hog, want 1", len(trials))
	}
	tr := trials[0]
	start, err1 := time.Parse(time.RFC3339Nano, tr.Seen[runner.SeenRunStarted])
	end, err2 := time.Parse(time.RFC3339Nano, tr.Seen[runner.SeenRunEnded])
	if err1 != nil || err2 != nil {
		t.Fatalf("the target's window: %v %v", err1, err2)
	}
	span := end.Sub(start).Seconds() + 2*0.25 // one core over it: its most
	v, ok := observed(tr, "neighbour.telemetry.cpu_seconds")
	t.Logf("the neighbour's cpu_seconds over the target's %.2f s window: %.3f (at most %.2f)", end.Sub(start).Seconds(), v, span)
	if !ok || v < 0.05*span || v > 1.02*span {
		t.Errorf("the neighbour's cpu_seconds over the target's window: %v (present %v), want more than a twentieth of its one core and at most all of it over %.2f s", v, ok, span)
	}
}

// TestWriteThrottle: write_bps caps direct writes, on both platforms. It
// runs wherever the machine lets a test make a place that takes O_DIRECT:
// the native agents write in $TMPDIR, which the test points at an ext4 it
// mounts on a loop device (a block device of its own, so the throttle has a
// device to name); where no loop device can be had, at the temporary
// directory if that is on a block device and takes O_DIRECT. Docker's
// volume lives wherever the daemon keeps its data: it is checked when it
// takes O_DIRECT; when not (buffered writes are not throttled per cgroup
// on v1), its subtest is skipped with the reason — go test lists it as
// SKIP — and never passes unchecked.
//
// The bounds are physical: a throttled rate at most 15% over the limit
// (load only slows writes), and an unthrottled one positive (1.3-3.0 GB/s
// measured with one core kept busy, 60 times the 21 MB/s limit; under
// twice the limit the log says the pair does not show the throttle).
// Chance failure nil.
func TestWriteThrottle(t *testing.T) {
	requireDocker(t)
	dir := directIODir(t)
	t.Setenv("TMPDIR", dir) // the ctrbench process, and so its native agents
	rows, _ := runReport[row](t, `name: e2e-throttle
seed: 7
repetitions: 1
factors:
  platform: [native, docker]
  storage: [layer, volume]
  write_bps: [none, 20MiB]
exclude:
  - {platform: native, storage: volume}
  - {platform: docker, storage: layer}
workloads:
  - {name: disk, type: disk.fio, params: {size: 64MiB, runtime: 2s, direct: true}}
`)
	got := map[string]float64{}
	for _, x := range rows {
		got[x.Cell["platform"]+" "+x.Cell["write_bps"]+" "+x.Metric] = x.Mean
	}
	limit := 20 * 1.048576 // MB/s
	for _, p := range []string{"native", "docker"} {
		t.Run(p, func(t *testing.T) {
			if got[p+" 20MiB direct"] != 1 || got[p+" none direct"] != 1 {
				if p == "native" {
					t.Fatalf("native: %s refused O_DIRECT (direct=%v), though the probe found it took it", dir, got[p+" 20MiB direct"])
				}
				t.Skipf("NOT CHECKED: docker's volume refused O_DIRECT here (direct=%v, %v): buffered writes are not throttled per cgroup on v1, so docker's write throttle cannot be checked on this machine", got[p+" 20MiB direct"], got[p+" none direct"])
			}
			t.Logf("%s: seq_write_mbs %.1f MB/s under the throttle, %.1f without", p, got[p+" 20MiB seq_write_mbs"], got[p+" none seq_write_mbs"])
			if v := got[p+" 20MiB seq_write_mbs"]; v <= 0 || v > 1.15*limit {
				t.Errorf("%s: seq_write_mbs %.1f MB/s under a %.1f MB/s throttle", p, v, limit)
			}
			// Without the throttle the device's own rate: at least the
			// throttle's (the throttle only slows writes). Where it is not
			// twice the limit the pair does not show the throttle, so the
			// test says so (the bound above is still checked).
			switch v := got[p+" none seq_write_mbs"]; {
			case v <= 0:
				t.Errorf("%s: unthrottled seq_write_mbs %.1f MB/s", p, v)
			case v < 2*limit:
				t.Logf("NOT SHOWN: %s: unthrottled seq_write_mbs %.1f MB/s, under twice the %.1f MB/s limit: this device is too slow for the pair to show the throttle", p, v, limit)
			}
		})
	}
}

// directIODir returns a directory on a block device that takes O_DIRECT:
// an ext4 the test makes in a file and mounts through a loop device
// (unmounted and detached at the end), else the temporary directory when
// it qualifies. Only a machine with neither skips.
func directIODir(t *testing.T) string {
	t.Helper()
	dir, loopErr := loopExt4(t)
	if loopErr == nil {
		return dir
	}
	tmp := os.TempDir()
	if _, _, err := sysinfo.BlockDevice(tmp); err != nil {
		t.Skipf("no place to throttle direct writes: no loop device (%v), and %v", loopErr, err)
	}
	if ok, err := takesODirect(tmp); err != nil || !ok {
		t.Skipf("no place to throttle direct writes: no loop device (%v), and %s refuses O_DIRECT (%v)", loopErr, tmp, err)
	}
	t.Logf("no loop device (%v): using %s", loopErr, tmp)
	return tmp
}

// loopExt4 makes a 1 GiB sparse file, an ext4 in it, and mounts it on a
// loop device it attaches; cleanup unmounts, detaches and removes it.
func loopExt4(t *testing.T) (string, error) {
	t.Helper()
	return loopExt4Sized(t, 1<<30)
}

// loopExt4Sized is loopExt4 of size bytes.
func loopExt4Sized(t *testing.T, size int64) (string, error) {
	t.Helper()
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", err
		}
	}
	base := t.TempDir()
	img, mnt := filepath.Join(base, "fs.img"), filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(img)
	if err != nil {
		return "", err
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	if out, err := exec.Command("mount", "-t", "ext4", dev, mnt).CombinedOutput(); err != nil {
		exec.Command("losetup", "-d", dev).Run()
		return "", fmt.Errorf("mount %s: %v: %s", dev, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
			return
		}
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	t.Logf("direct writes go to an ext4 on %s, mounted at %s", dev, mnt)
	return mnt, nil
}

// takesODirect reports whether a file in dir can be opened with O_DIRECT.
func takesODirect(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, "odirect-probe-")
	if err != nil {
		return false, err
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	fd, err := syscall.Open(name, syscall.O_WRONLY|syscall.O_DIRECT, 0)
	if err == syscall.EINVAL {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	syscall.Close(fd)
	return true, nil
}
