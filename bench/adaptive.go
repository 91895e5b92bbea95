package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// adaptiveExperiment is a mixed experiment: two steady CPU workloads and
// a noisy network one, on the machine and in containers. %s is the
// repetitions: a number, or the adaptive mapping.
const adaptiveExperiment = `name: bench-adaptive
seed: 20261123
repetitions: %s
warmup: 1
timeout: 1m
factors:
  placement:
    native: {platform: native, network: host}
    docker: {platform: docker, network: host}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 1s, max_prime: 3000}}
  - {name: cpu2, type: cpu.primes, params: {duration: 1s, max_prime: 8000}}
  - {name: tcp, type: net.tcp_stream, params: {duration: 300ms}}
`

// adaptiveSaving runs the mixed experiment twice, interleaved in one
// session: with a fixed max repetitions, and adaptively (min 3, the same
// max, a ±rci target on each cell's first metric). It prints, per cell,
// the trials each used and the interval half-width each reached, and the
// saving: the adaptive run should give every cell the target width (or,
// where the target is out of reach, the fixed run's n) with far fewer
// trials.
func adaptiveSaving(ctx context.Context, bin string, max int, rci string) error {
	fixed, err := runBench(ctx, bin, fmt.Sprint(max))
	if err != nil {
		return err
	}
	adaptive, err := runBench(ctx, bin, fmt.Sprintf("{min: 3, max: %d, rci: %s}", max, rci))
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "\nadaptive repetition (min 3, max %d, target ±%s) against a fixed %d, on each cell's first metric\n", max, rci, max)
	fmt.Fprintln(w, "cell\tfixed n\tfixed ±%\tadaptive n\tadaptive ±%\treached")
	for i, f := range fixed.rows {
		a := adaptive.rows[i]
		reached := "-"
		if a.Reached != nil {
			reached = fmt.Sprint(*a.Reached)
		}
		fmt.Fprintf(w, "%s %s\t%d\t%.2f\t%d\t%.2f\t%s\n", f.Workload, f.Cell["placement"], f.N, halfPct(f), a.N, halfPct(a), reached)
	}
	nf, na := fixed.trials, adaptive.trials
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Printf("trials (warm-ups included): fixed %d in %s, adaptive %d in %s: %.0f%% fewer (target: at least 40%% fewer)\n",
		nf, fixed.took.Round(time.Second), na, adaptive.took.Round(time.Second), 100*(1-float64(na)/float64(nf)))
	return nil
}

// halfPct is a row's 95% interval half-width relative to its mean, in
// percent.
func halfPct(r analysis.Row) float64 { return 100 * (r.CI95[1] - r.Mean) / r.Mean }

type benchRun struct {
	rows   []analysis.Row // each cell's first metric, in cell order
	trials int
	took   time.Duration
	source *analysis.Memory // the campaign, for compare
	id     string
}

// runBench runs the mixed experiment with the given repetitions.
func runBench(ctx context.Context, bin, reps string) (benchRun, error) {
	text := fmt.Sprintf(adaptiveExperiment, reps)
	e, err := spec.Parse("bench-adaptive.yaml", []byte(text), nil, spec.Machine{})
	if err != nil {
		return benchRun{}, err
	}
	cells := e.Cells()
	camp := result.Campaign{ID: fmt.Sprintf("bench-adaptive-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), Name: e.Name, SpecText: e.Text}
	var trials []result.Trial
	start := time.Now()
	if _, err := orchestrator.Run(ctx, orchestrator.Config{
		Experiment: e, CampaignID: camp.ID, Cells: cells, Binary: bin,
		Sink:     func(_ context.Context, t result.Trial) error { trials = append(trials, t); return nil },
		Progress: orchestrator.NewProgress(os.Stderr, false),
	}); err != nil {
		return benchRun{}, err
	}
	run := benchRun{trials: len(trials), took: time.Since(start), source: analysis.NewMemory(camp, cells, trials), id: camp.ID}
	l, err := analysis.Load(ctx, run.source, analysis.Query{Campaign: camp.ID})
	if err != nil {
		return benchRun{}, err
	}
	for _, r := range analysis.Rows(l.Series) {
		if ws, ok := workload.Lookup(r.WorkloadType); ok && r.Metric == ws.Metrics[0].Name {
			run.rows = append(run.rows, r)
		}
	}
	return run, nil
}
