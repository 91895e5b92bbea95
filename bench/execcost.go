package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/userimage"
)

// execExperiment is one exec trial of a trivial command from a user's image
// in Docker, %d times after a warm-up, on Docker's default bridge as
// `docker run` is: a network of the campaign's own (network: bridge) costs
// Docker ~85 ms more to start a container on (docker events: network
// connect to start 365 ms against 280 ms here, `docker run --network`
// alike), which is Docker's, not ctrbench's.
const execExperiment = `name: bench-exec
seed: 11
repetitions: %d
warmup: 1
timeout: 1m
factors:
  platform: [docker]
  network: [bridge-default]
workloads:
  - {name: "true", type: exec, params: {image: %q, command: [/bin/busybox, "true"]}}
`

// execCost compares what an exec trial costs — from the orchestrator's
// start of the trial to its end: the container created, started, the
// command run, its record read, the container removed — with `docker run
// --rm` of the same image and command timed by the wall clock, in rounds
// ABBA so that a drift of the machine falls on both sides alike. The image
// (an archive from scripts/images.sh) is loaded first and removed after,
// unless the engine had it already. Campaign set-up (the network, the agent
// image) is outside a trial's span, as `docker run`'s image pull would be.
func execCost(ctx context.Context, bin, archive string, reps int) error {
	im, err := userimage.Open(archive)
	if err != nil {
		return err
	}
	tags := im.RepoTags()
	im.Close()
	if len(tags) != 1 {
		return fmt.Errorf("%s: want a docker save archive of an image with one tag, not %q", archive, tags)
	}
	ref := tags[0]
	had := exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil
	if out, err := exec.CommandContext(ctx, "docker", "load", "-i", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("docker load -i %s: %v: %s", archive, err, out)
	}
	if !had { // the image is the user's when the engine had it before
		defer exec.Command("docker", "rmi", ref).Run()
	}

	var ours, cli []float64
	for round := range 4 {
		if round == 0 || round == 3 {
			t, err := execTrials(ctx, bin, ref, reps)
			if err != nil {
				return err
			}
			ours = append(ours, t...)
			continue
		}
		for range reps {
			start := time.Now()
			if out, err := exec.CommandContext(ctx, "docker", "run", "--rm", ref, "/bin/busybox", "true").CombinedOutput(); err != nil {
				return fmt.Errorf("docker run --rm %s: %v: %s", ref, err, out)
			}
			cli = append(cli, time.Since(start).Seconds())
		}
	}
	j := judge(ours, cli, 0, 1.1)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\ncomparison\tours (mean)\tdocker run --rm (mean)\tratio\t95% CI\ttarget\tverdict")
	fmt.Fprintf(w, "exec trial of /bin/busybox true in Docker (%s), n=%d each\t%.3f s\t%.3f s\t%.3f\t%s\t%s\t%s\n",
		strings.TrimPrefix(ref, "ctrbench-example/"), len(ours), j.ours, j.ref, j.ratio, j.ci, j.target, j.verdict)
	return w.Flush()
}

// execTrials runs the exec experiment and returns each measured trial's
// span, start to end, in seconds.
func execTrials(ctx context.Context, bin, ref string, reps int) ([]float64, error) {
	e, err := spec.Parse("bench-exec.yaml", []byte(fmt.Sprintf(execExperiment, reps, ref)), nil, spec.Machine{})
	if err != nil {
		return nil, err
	}
	var spans []float64
	var failed []string
	if _, err := orchestrator.Run(ctx, orchestrator.Config{
		Experiment: e, CampaignID: fmt.Sprintf("bench-exec-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), Cells: e.Cells(), Binary: bin,
		Sink: func(_ context.Context, t result.Trial) error {
			switch {
			case t.Status != result.OK:
				failed = append(failed, t.Error)
			case !t.Warmup:
				spans = append(spans, t.Ended.Sub(t.Started).Seconds())
			}
			return nil
		},
		Progress: orchestrator.NewProgress(os.Stderr, false),
	}); err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("exec trials failed: %s", failed[0])
	}
	return spans, nil
}
