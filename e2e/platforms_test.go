package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform/lxc"
	"github.com/ctrbench/ctrbench/internal/platform/vm"
)

// TestVirtualMachines runs a CPU workload and S1's creation time in QEMU
// virtual machines (TCG on this project's machines) on the campaign's
// bridge; the campaign records the accelerator. (Client and server each in
// a machine of its own is TestVMWithEngineInside's request/response and
// the vm platform's conformance suite's client-server check.)
func TestVirtualMachines(t *testing.T) {
	requireDocker(t)
	if err := vm.Available(); err != nil {
		t.Skip(err)
	}
	rows, db := runReport[row](t, `name: e2e-vm
seed: 4
repetitions: 1
factors:
  platform: [vm]
  network: [bridge]
  memory: [512MiB]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 1s, max_prime: 3000}}
  - {name: create, type: lifecycle.run, params: {command: sysbench}}
`)
	got := map[string]float64{}
	for _, x := range rows {
		got[x.Workload+" "+x.Metric] = x.Mean
	}
	for _, m := range []string{"cpu events_per_sec", "create makespan"} {
		if got[m] <= 0 {
			t.Errorf("%s: %v (rows %v)", m, got[m], got)
		}
	}
	// Without hardware virtualisation every row says it compares with
	// nothing, in JSON and in the table's legend.
	if vm.DetectAccel().Name == "tcg" {
		js := ctrbench(t, time.Minute, "report", "--db", db, "--format", "json")
		if n := strings.Count(js.stdout, `"not_comparable": "vm: emulated (TCG`); n != len(rows) {
			t.Errorf("%d of %d rows say they are not comparable:\n%s", n, len(rows), js.stdout)
		}
		table := ctrbench(t, time.Minute, "report", "--db", db)
		contains(t, "the table report", table.stdout, "† not comparable with any other row — vm: emulated (TCG")
	}
}

// TestInterruptAndKillOtherPlatforms: LXC containers, podman containers
// and virtual machines in the middle of an hour-long trial. Ctrl-C stops
// each campaign and removes everything it made; kill -9 leaves what
// `ctrbench clean` then removes. Either way no LXC monitor, podman
// process, QEMU, link, rule, cgroup or directory of the campaign is left.
// make test runs the Ctrl-C round of LXC and podman; make test-full the
// virtual machines' and the kill -9 round too (each platform's clean after
// a kill is its package's TestCleanAfterKill, clean's command line is
// TestCleanAfterSIGKILL's, and a running machine removed is the vm
// platform's conformance suite's "remove stops a running agent": Ctrl-C
// removes a machine the same way as a container).
func TestInterruptAndKillOtherPlatforms(t *testing.T) {
	requireDocker(t)
	if err := lxc.Available(); err != nil {
		t.Skip(err)
	}
	if err := vm.Available(); err != nil {
		t.Skip(err)
	}
	signals := []syscall.Signal{syscall.SIGINT}
	stopped := []struct{ name, network string }{{"lxc", "bridge"}, {"podman", "host"}}
	if full() {
		signals = append(signals, syscall.SIGKILL)
		stopped = append(stopped, struct{ name, network string }{"vm", "bridge"})
	}
	for _, sig := range signals {
		type started struct {
			platform, id string
			stop         func() int
		}
		var runs []started
		for _, pl := range stopped {
			exp := writeExperiment(t, `name: e2e-stop-`+pl.name+`
seed: 1
repetitions: 1
timeout: 1h
factors:
  platform: [`+pl.name+`]
  network: [`+pl.network+`]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1h}}
`)
			cmd, stderr := startCtrbench(t, "run", exp, "--db", filepath.Join(t.TempDir(), "r.db"), "--no-report")
			waitFor(t, pl.name+" campaign to start", time.Minute, func() bool { return campaignLine.MatchString(stderr.String()) })
			id := campaignID(t, stderr.String())
			runs = append(runs, started{pl.name, id, func() int {
				_ = cmd.Process.Signal(sig)
				return exitCode(t, cmd, 2*time.Minute)
			}})
		}
		for _, r := range runs {
			// Both roles of the first trial run: their names are in the
			// command lines of LXC's monitors, podman's conmon, QEMU.
			waitFor(t, r.platform+" instances running", 2*time.Minute, func() bool {
				return len(procsMentioning("ctrbench-"+r.id+"-")) >= 2
			})
		}
		time.Sleep(time.Second)
		for _, r := range runs {
			code := r.stop()
			if sig == syscall.SIGINT && code != 1 {
				t.Errorf("%s: exit %d after Ctrl-C, want 1", r.platform, code)
			}
		}
		for _, r := range runs {
			if sig == syscall.SIGKILL {
				c := ctrbench(t, 2*time.Minute, "clean", "--campaign", r.id)
				if c.code != 0 {
					t.Errorf("%s: clean exited %d: %s%s", r.platform, c.code, c.stdout, c.stderr)
				}
			}
			waitFor(t, r.platform+" processes to end", 20*time.Second, func() bool { return len(procsMentioning(r.id)) == 0 })
			assertNothingLeft(t, r.id)
		}
	}
}

// procsMentioning lists live processes whose command line contains s.
func procsMentioning(s string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(d, "stat")); err == nil {
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				continue // a zombie waits for its parent (this test) to reap it
			}
		}
		out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// TestLabNetworksOnLXCAndPodman: LXC and podman containers over loopback
// (one container joining the other's namespace) and the modes the lab
// wires on the machine (macvlan, Open vSwitch); each agent saw the
// interface it should.
func TestLabNetworksOnLXCAndPodman(t *testing.T) {
	requireDocker(t)
	if err := lxc.Available(); err != nil {
		t.Skip(err)
	}
	db, id := runStored(t, `name: e2e-lab-lxc-podman
seed: 12
repetitions: 1
factors:
  platform: [lxc, podman]
  network: [loopback, macvlan, ovs]
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 300ms}}
`)
	trials := storedTrials(t, db, id)
	factors := cellFactors(t, db, id)
	if len(trials) != 6 {
		t.Fatalf("%d trials, want 6", len(trials))
	}
	want := map[string]string{"loopback": "loopback only", "ovs": "198.18.200.", "macvlan": "198.18.201."}
	for _, tr := range okOf(t, trials, nil) {
		net := factors[tr.CellID]["network"]
		if !strings.Contains(tr.Seen["server.net.interfaces"], want[net]) {
			t.Errorf("%s/%s: the server saw %q, want %q", factors[tr.CellID]["platform"], net, tr.Seen["server.net.interfaces"], want[net])
		}
	}
}
