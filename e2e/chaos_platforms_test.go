package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/result"
)

// Faults of the platforms' own processes: an engine frozen or killed,
// containerd, podman's service, an LXC monitor, QEMU, a swarm node's
// engine.

// signalMatching sends sig to every process whose command line matches
// pattern (pgrep -f), this one aside; it returns how many it signalled.
func signalMatching(t *testing.T, pattern string, sig syscall.Signal) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", pattern).Output()
	n := 0
	for _, f := range strings.Fields(string(out)) {
		var pid int
		fmt.Sscan(f, &pid)
		if pid > 0 && pid != os.Getpid() && syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// waitEngine waits until the engine answers.
func waitEngine(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := engine.Available(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not answer within %s: %v", d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// longTrials is a campaign on one platform whose trials run for seconds.
func longTrials(name, platform string, reps int, extra string) string {
	return fmt.Sprintf(`name: %s
seed: 1
repetitions: %d
warmup: 0
timeout: 20s
factors:
  platform: [%s]
%sworkloads:
  - {name: p, type: cpu.primes, params: {duration: 3s, max_prime: "2000"}}
`, name, reps, platform, extra)
}

// waitRunning waits until the run has started its first instance and
// gives the trial a moment to be under way.
func waitRunning(t *testing.T, r *bgRun, pattern string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		out, _ := exec.Command("pgrep", "-f", pattern).Output()
		if len(strings.TrimSpace(string(out))) > 0 {
			time.Sleep(time.Second)
			return
		}
		select {
		case <-r.done:
			t.Fatalf("the run ended before its first instance ran:\n%s", r.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no %q process within 2 minutes:\n%s", pattern, r.stderr)
}

// faultRun is what ctrbench did about a fault injected mid-trial.
type faultRun struct {
	id, msg     string
	code, rcode int // rcode: the resume's exit status, -1 when none was needed
	l           ledger
	// retried counts the attempts the platform failed and a retry
	// replaced; what lists them and the trials that did not end ok.
	retried int
	what    []string
}

// runFault runs src (reps trials), injects the fault once a process
// matching running is under way, and waits for the end. A campaign that
// stopped is resumed once, after recover (when given). It checks what
// every case promises: the results file intact, no trial lost or
// duplicated, the last exit 0 or 3 (trials failed).
func runFault(t *testing.T, src string, reps int, running string, inject, recover func()) faultRun {
	t.Helper()
	db := filepath.Join(t.TempDir(), "r.db")
	run := startRun(t, "run", writeExperiment(t, src), "--db", db, "--no-report")
	waitRunning(t, run, running)
	inject()
	f := faultRun{code: run.wait(t, 8*time.Minute), rcode: -1}
	if recover != nil {
		recover()
	}
	f.msg = lastLine(run.stderr.String())
	f.id = campaignLine.FindStringSubmatch(run.stderr.String())[1]
	last, out := f.code, run.stderr.String()
	if f.code != 0 && f.code != 3 {
		again := startRun(t, "run", "--db", db, "--resume", f.id, "--no-report")
		f.rcode = again.wait(t, 8*time.Minute)
		last, out = f.rcode, again.stderr.String()
	}
	f.l = readLedger(t, db, f.id, reps)
	for _, tr := range f.l.trials {
		for _, a := range tr.Attempts {
			f.retried++
			f.what = append(f.what, fmt.Sprintf("trial %d: an attempt failed by the %s, retried", tr.Seq, a.FailedBy))
		}
		if tr.Status != result.OK {
			f.what = append(f.what, fmt.Sprintf("trial %d %s: %s", tr.Seq, tr.Status, clip(tr.Error, 140)))
		}
	}
	if last != 0 && last != 3 || f.l.integrity != nil || f.l.lost != 0 || f.l.dup != 0 {
		t.Errorf("exit %d (then %d), integrity %v, lost %d, duplicated %d\n%s", f.code, f.rcode, f.l.integrity, f.l.lost, f.l.dup, out)
	}
	return f
}

// row is the table's row for the case.
func (f faultRun) row(t *testing.T, order int, fault, did string) chaosRow {
	exit := fmt.Sprint(f.code)
	if f.rcode >= 0 {
		exit = fmt.Sprintf("%d, then %d after resume", f.code, f.rcode)
	}
	if len(f.what) > 0 {
		did += "; " + strings.Join(f.what, "; ")
	}
	return chaosRow{Order: order, Fault: fault, Did: did, Lost: f.l.lost, Dup: f.l.dup, Left: leftWord(t, f.id), Exit: exit, Message: f.msg}
}

const primesRunning = "ctrbench agent run --workload cpu.primes"

// The engine frozen (SIGSTOP) mid-trial: the trial times out, the circuit
// breaker pings the engine for its bounded wait and stops the campaign
// saying what to do; after SIGCONT, resume completes it.
func TestChaosEngineFrozen(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	var frozen time.Time
	var stopped time.Duration
	eng := machineEngine(t)
	thaw := func() { eng.signal(t, syscall.SIGCONT) }
	t.Cleanup(thaw)
	f := runFault(t, longTrials("chaos-frozen", "docker", 3, ""), 3, primesRunning, func() {
		eng.signal(t, syscall.SIGSTOP)
		frozen = time.Now()
	}, func() {
		stopped = time.Since(frozen)
		thaw()
		waitEngine(t, time.Minute)
	})
	if f.code != 1 || !strings.Contains(f.msg, "stopped answering") || !strings.Contains(f.msg, "--resume "+f.id) {
		t.Errorf("exit %d: %s", f.code, f.msg)
	}
	record(t, start, f.row(t, 40, "the engine frozen (SIGSTOP dockerd) mid-trial",
		fmt.Sprintf("the trial timed out and was recorded; the circuit breaker pinged for its 30 s and stopped the campaign %s after the freeze; after SIGCONT, `run --resume` completed it", stopped.Round(time.Second))))
}

// The engine killed (SIGKILL dockerd) mid-trial and started again: the
// trial the platform failed is retried under a new name, the breaker
// waits for the engine, and the campaign completes.
func TestChaosEngineKilled(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	eng := machineEngine(t)
	f := runFault(t, longTrials("chaos-killed", "docker", 3, ""), 3, primesRunning, func() {
		eng.signal(t, syscall.SIGKILL)
		time.Sleep(time.Second)
		eng.restart(t) // as the machine started it: the same binary, arguments and environment
	}, nil)
	record(t, start, f.row(t, 41, "the engine killed (SIGKILL dockerd) mid-trial, then started again",
		"the campaign went on and completed"))
}

// containerd killed mid-trial: dockerd starts it again, and the
// campaign completes.
func TestChaosContainerdKilled(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	f := runFault(t, longTrials("chaos-containerd", "docker", 3, ""), 3, primesRunning, func() {
		eng := machineEngine(t)
		if err := syscall.Kill(eng.containerd(t), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}, func() { waitEngine(t, time.Minute) })
	record(t, start, f.row(t, 42, "containerd killed (SIGKILL) mid-trial", "dockerd restarted containerd; the campaign went on and completed"))
}

// podman's API service (the `podman system service` ctrbench started)
// killed mid-trial: the trial fails, the breaker finds podman silent and
// stops the campaign saying what to do; resume starts a service anew and
// completes it.
func TestChaosPodmanServiceKilled(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	f := runFault(t, longTrials("chaos-podman", "podman", 3, ""), 3, primesRunning, func() {
		if signalMatching(t, "podman.*system service", syscall.SIGKILL) == 0 {
			t.Fatal("no podman service to kill")
		}
	}, nil)
	record(t, start, f.row(t, 43, "podman's API service killed (SIGKILL) mid-trial",
		"the breaker found podman's service silent and stopped the campaign; `run --resume` started a service anew and completed it"))
}

// The engine of an emulated swarm's worker node killed mid-trial: the
// trials placed on it fail or time out, the breaker finds the node's
// engine silent and stops the campaign naming the node; resume builds a
// new emulated swarm.
func TestChaosSwarmNodeKilled(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	src := `name: chaos-swarm
seed: 1
repetitions: 2
warmup: 0
timeout: 30s
factors:
  platform: [swarm]
  hosts: [2]
  network: [overlay]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 3s}}
`
	f := runFault(t, src, 2, "ctrbench agent run --workload net.tcp_stream", func() {
		// The worker's engine: the node engine whose container is
		// node2 (its /etc/hostname, seen through /proc).
		out, _ := exec.Command("pgrep", "-f", "dockerd.*/ctb/docker.sock").Output()
		killed := 0
		for _, p := range strings.Fields(string(out)) {
			var pid int
			fmt.Sscan(p, &pid)
			if h, _ := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/hostname", pid)); strings.HasSuffix(strings.TrimSpace(string(h)), "node2") && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			t.Fatalf("no engine of node2 to kill (%q)", out)
		}
	}, nil)
	record(t, start, f.row(t, 44, "the engine of an emulated swarm's worker node (node2) killed (SIGKILL) mid-trial",
		"the breaker found node2's engine silent and stopped the campaign naming the node; `run --resume` built a new emulated swarm"))
}

// A platform's own process killed mid-trial — an LXC container's monitor
// (lxc-execute), a virtual machine's QEMU: the trial fails, and the
// campaign goes on to completion.
func TestChaosInstanceProcessKilled(t *testing.T) {
	chaosCase(t, false)
	for i, c := range []struct{ platform, process, fault, extra string }{
		{"lxc", "lxc-execute -n ctrbench", "an LXC container's monitor (lxc-execute) killed mid-trial", ""},
		{"vm", "qemu-system", "a virtual machine's QEMU killed mid-trial", "  network: [bridge]\n"},
	} {
		t.Run(c.platform, func(t *testing.T) {
			start := time.Now()
			f := runFault(t, longTrials("chaos-"+c.platform, c.platform, 2, c.extra), 2, c.process, func() {
				if signalMatching(t, c.process, syscall.SIGKILL) == 0 {
					t.Fatalf("no %s to kill", c.process)
				}
			}, nil)
			record(t, start, f.row(t, 50+i, c.fault, "the campaign went on and completed"))
		})
	}
}
