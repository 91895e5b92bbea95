package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
)

// lifecycleExperiment creates %d entities at once on %s; %s are more
// factors.
const lifecycleExperiment = `name: bench-fanout
seed: 7
repetitions: 1
timeout: 20m
factors:
  platform: [%s]
  instances: [%d]
%s
workloads:
  - {name: create, type: lifecycle.run, params: {command: noop}}
`

// fanOut compares ctrbench's own start-up of n containers — created,
// started and removed concurrently through the Engine API — with n
// `docker run -d` run in parallel from the CLI and then `docker rm -f`,
// the same image and command, interleaved reps times. Ours is the
// lifecycle runner's span, from the first container asked for to the last
// one removed; the CLI's is the wall time of both steps.
func fanOut(ctx context.Context, bin string, n, reps int) error {
	var ours, cli []float64
	for r := range reps {
		t, info, err := lifecycleRun(ctx, bin, "docker", n, "")
		if err != nil {
			return err
		}
		ours = append(ours, t["span"])
		secs, err := cliFanOut(ctx, info["docker.image"], n, r)
		if err != nil {
			return err
		}
		cli = append(cli, secs)
		fmt.Fprintf(os.Stderr, "bench: fan-out %d: ctrbench %.2f s, docker CLI %.2f s\n", r+1, ours[len(ours)-1], secs)
	}
	j := judge(ours, cli, 0, 0.5)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "\ncreate, start and remove %d containers at once (%d runs each, interleaved)\n", n, reps)
	fmt.Fprintln(w, "ctrbench (Engine API)\tdocker run -d in parallel + rm -f\tratio\t95% CI\ttarget\tverdict")
	fmt.Fprintf(w, "%.2f s\t%.2f s\t%.3f\t%s\t%s\t%s\n", j.ours, j.ref, j.ratio, j.ci, j.target, j.verdict)
	return w.Flush()
}

// lifecycleRun runs one lifecycle trial and returns its measures and the
// campaign's environment record.
func lifecycleRun(ctx context.Context, bin, pl string, n int, extra string) (map[string]float64, map[string]string, error) {
	text := fmt.Sprintf(lifecycleExperiment, pl, n, extra)
	e, err := spec.Parse("bench-fanout.yaml", []byte(text), nil, spec.Machine{})
	if err != nil {
		return nil, nil, err
	}
	cells := e.Cells()
	id := fmt.Sprintf("bench-fanout-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	var trials []result.Trial
	var info map[string]string
	if _, err := orchestrator.Run(ctx, orchestrator.Config{
		Experiment: e, CampaignID: id, Cells: cells, Binary: bin,
		Sink:     func(_ context.Context, t result.Trial) error { trials = append(trials, t); return nil },
		Progress: orchestrator.NewProgress(os.Stderr, false),
		Prepared: func(m map[string]string) { info = m },
	}); err != nil {
		return nil, nil, err
	}
	src := analysis.NewMemory(result.Campaign{ID: id}, cells, trials)
	if f, err := analysis.LoadFailures(ctx, src, id); err == nil && len(f.Trials) > 0 {
		return nil, info, fmt.Errorf("%d entities on %s: %s", n, pl, f.Trials[0].Error)
	}
	out := map[string]float64{}
	for _, t := range trials {
		for _, o := range t.Observations {
			if o.Scope == "" || o.Scope == result.ScopeTrial {
				out[o.ID().String()] = o.Value
			}
		}
	}
	return out, info, nil
}

// cliFanOut runs n `docker run -d` in parallel, then removes them all with
// `docker rm -f` in parallel, and returns the wall time of both.
func cliFanOut(ctx context.Context, img string, n, rep int) (float64, error) {
	if img == "" {
		return 0, fmt.Errorf("the campaign did not record its agent image")
	}
	campaign := fmt.Sprintf("bench-cli-%d-%d", os.Getpid(), rep)
	// The same network as ctrbench's cell (host); every run must succeed,
	// and every container is counted before it is removed.
	script := fmt.Sprintf(`set -e
seq %d | xargs -P %d -I{} docker run -d --network host --label %s=true --label %s=%s --name %s-{} %s agent run --workload lifecycle.run --role main >/dev/null
test "$(docker ps -aq --filter label=%s=%s | wc -l)" -eq %d
docker ps -aq --filter label=%s=%s | xargs -P %d docker rm -f >/dev/null`,
		n, n, platform.LabelManaged, platform.LabelCampaign, campaign, campaign, img, platform.LabelCampaign, campaign, n, platform.LabelCampaign, campaign, n)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "sh", "-c", script).CombinedOutput()
	took := time.Since(start).Seconds()
	if err != nil {
		_ = exec.Command("sh", "-c", fmt.Sprintf("docker ps -aq --filter label=%s=%s | xargs -r docker rm -f", platform.LabelCampaign, campaign)).Run()
		return 0, fmt.Errorf("docker CLI fan-out: %v: %s", err, out)
	}
	return took, nil
}

// idleRSS starts an idle agent (a neighbour that does nothing) as a host
// process and reads its resident set once it has settled.
func idleRSS(ctx context.Context, bin string) error {
	cmd := exec.CommandContext(ctx, bin, "agent", "loop", "--workload", "idle")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(2 * time.Second)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return err
	}
	kib := 0
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	verdict := "met"
	if kib > 10<<10 {
		verdict = "MISSED"
	}
	fmt.Printf("\nidle agent resident set: %.1f MiB (target <= 10 MiB): %s\n", float64(kib)/1024, verdict)
	return nil
}

// mostChildren creates n children in one nested parent (S1's Table I,
// one parent with 256 children: 111 s), halving n until a run completes, and prints the
// largest that did with its makespan.
func mostChildren(ctx context.Context, bin string, n int) error {
	for ; n >= 1; n /= 2 {
		m, _, err := lifecycleRun(ctx, bin, "nested", n, fmt.Sprintf("  children: [%d]", n))
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %d children in one parent: %v\n", n, err)
			continue
		}
		fmt.Printf("\nmost children in one nested parent: %d (target 256), all created, run and removed; makespan %.1f s, slowest child %.1f s from request to removal\n", n, m["makespan"], m["total_max"])
		return nil
	}
	return fmt.Errorf("not even one child in a nested parent completed")
}
