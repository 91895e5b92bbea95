package e2e

import (
	"bufio"
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
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
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

// The engine frozen (SIGSTOP) at four phases — the campaign preparing
// its platform, a trial's container being made, its measurement under
// way, its container being removed — with the default 5-minute trial
// timeout: each time the watchdog pings the engine from 15 s into the
// phase, finds it silent for its 30 s, and stops the campaign as an
// interruption, within 90 s of the freeze whatever the phase; a trial
// whose measurement had ended is recorded with its removal noted. After SIGCONT, `run --resume`
// completes the campaign: nothing lost, nothing twice.
func TestChaosEngineFrozen(t *testing.T) {
	chaosCase(t, true)
	for i, phase := range []struct {
		name, what string
		at         func(t *testing.T, r *bgRun, id string)
	}{
		{"preparing", "as the campaign prepared its platform", func(*testing.T, *bgRun, string) {}},
		{"start", "as a trial's container had been made and was being started", func(t *testing.T, _ *bgRun, id string) {
			waitEvent(t, id, "create", 3*time.Minute)
		}},
		{"measuring", "mid-measurement (its workload running for 2 s)", func(t *testing.T, r *bgRun, _ string) {
			waitRunning(t, r, primesRunning)
		}},
		{"removal", "as its container ended and was being removed", func(t *testing.T, _ *bgRun, id string) {
			waitEvent(t, id, "die", 3*time.Minute)
		}},
	} {
		t.Run(phase.name, func(t *testing.T) {
			start := time.Now()
			eng := machineEngine(t)
			thaw := func() { eng.signal(t, syscall.SIGCONT) }
			t.Cleanup(thaw)
			db := filepath.Join(t.TempDir(), "r.db")
			// No timeout in the file: the default, 5 minutes.
			src := fmt.Sprintf("name: chaos-frozen-%s\nseed: 1\nrepetitions: 2\nwarmup: 0\nfactors:\n  platform: [docker]\nworkloads:\n  - {name: p, type: cpu.primes, params: {duration: 4s, max_prime: \"2000\"}}\n", phase.name)
			r := startRun(t, "run", writeExperiment(t, src), "--db", db, "--no-report")
			if !r.waitFor(t, `campaign \S+:`, time.Minute) {
				t.Fatalf("no campaign:\n%s", r.stderr)
			}
			id := campaignLine.FindStringSubmatch(r.stderr.String())[1]
			phase.at(t, r, id)
			eng.signal(t, syscall.SIGSTOP)
			frozen := time.Now()
			code := r.wait(t, 5*time.Minute)
			stopped := time.Since(frozen)
			thaw()
			waitEngine(t, time.Minute)
			msg := lastLine(r.stderr.String())
			if code != 1 || !strings.Contains(msg, "stopped answering") || !strings.Contains(msg, "--resume "+id) {
				t.Errorf("exit %d: %s", code, msg)
			}
			if stopped > 90*time.Second {
				t.Errorf("the campaign stopped %s after the freeze, more than 90 s", stopped.Round(time.Second))
			}
			recorded := readLedger(t, db, id, 2).trials
			again := startRun(t, "run", "--db", db, "--resume", id, "--no-report")
			rcode := again.wait(t, 5*time.Minute)
			l := readLedger(t, db, id, 2)
			if rcode != 0 || l.integrity != nil || l.lost != 0 || l.dup != 0 {
				t.Errorf("resume: exit %d, integrity %v, lost %d, duplicated %d\n%s", rcode, l.integrity, l.lost, l.dup, again.stderr)
			}
			did := fmt.Sprintf("the watchdog found the engine silent and stopped the campaign %s after the freeze (bound 90 s); %d trial(s) recorded before the stop", stopped.Round(time.Second), len(recorded))
			for _, tr := range recorded {
				if note := tr.Seen[runner.SeenRemoval]; note != "" {
					did += fmt.Sprintf("; trial %d recorded with what it measured, its removal %s", tr.Seq, clip(note, 80))
				}
			}
			did += "; after SIGCONT, `run --resume` completed it"
			record(t, start, chaosRow{Order: 36 + i, Fault: "the engine frozen (SIGSTOP dockerd) " + phase.what + ", trial timeout 5 min (the default)", Did: did,
				Lost: l.lost, Dup: l.dup, Left: leftWord(t, id), Exit: fmt.Sprintf("%d, then %d after resume", code, rcode), Message: msg})
		})
	}
}

// waitEvent waits until the engine reports action (die, kill…) of a
// container of campaign id.
func waitEvent(t *testing.T, id, action string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "events", "--format", "{{.Action}}",
		"--filter", "type=container", "--filter", "event="+action, "--filter", "label="+platform.LabelCampaign+"="+id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, action) {
		t.Fatalf("no %s event of campaign %s within %s: %q %v", action, id, d, line, err)
	}
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

// A container removed from outside (`docker rm -f`) mid-trial: the
// platform's failure, not the workload's, so the attempt is recorded as
// the platform's and the trial tried again; the campaign completes.
func TestChaosContainerRemovedFromOutside(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	f := runFault(t, longTrials("chaos-rm", "docker", 3, ""), 3, primesRunning, func() {
		out, err := exec.Command("docker", "ps", "-q", "--filter", "label="+platform.LabelCampaign).Output()
		ids := strings.Fields(string(out))
		if err != nil || len(ids) == 0 {
			t.Fatalf("no container of the campaign to remove: %v", err)
		}
		if out, err := exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).CombinedOutput(); err != nil {
			t.Fatalf("docker rm -f: %v: %s", err, out)
		}
	}, nil)
	if f.retried < 1 || f.code != 0 {
		t.Errorf("exit %d, %d attempt(s) retried: want the removed container's trial retried as the platform's failure and the campaign complete (%v)", f.code, f.retried, f.what)
	}
	record(t, start, f.row(t, 45, "a trial's container removed from outside (docker rm -f) mid-trial", "the trial's attempt failed by the platform (the container was removed by something else than ctrbench) and was tried again; the campaign completed"))
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
	chaosCase(t, true)
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
