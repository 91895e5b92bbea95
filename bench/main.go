// Command bench runs ctrbench's own load generators side by side with the
// reference tools — on the same paths, in one campaign, interleaved in a
// seeded random order — and prints each ratio with its 95% interval against
// the target it must meet. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	_ "github.com/ctrbench/ctrbench/internal/platform/drivers" // registers every platform
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

// comparison is one side-by-side check: ours / reference on one metric.
type comparison struct {
	name      string
	ours, ref string // workload names in the experiment
	metric    string
	refMetric string
	// The ratio ours/reference must be at least min (throughput) or at
	// most max (latency); 0 means unbounded.
	min, max float64
	// pinned: compared with both tools' roles on fixed CPUs, one case
	// with client and server on one CPU and one with each on its own.
	pinned bool
	// nginx: both drive the same nginx, a service from the example image
	// (skipped when there is no image archive to run it from).
	nginx bool
}

var comparisons = []comparison{
	{name: "net.tcp_stream vs iperf3 (throughput)", ours: "tcp_stream", ref: "iperf3", metric: "throughput", refMetric: "throughput", min: 1.0},
	{name: "net.tcp_rr vs sockperf ping-pong (p50 latency)", ours: "tcp_rr", ref: "sockperf", metric: "latency_p50", refMetric: "latency_p50", max: 1.0, pinned: true},
	{name: "net.tcp_rr vs sockperf ping-pong (p99 latency)", ours: "tcp_rr", ref: "sockperf", metric: "latency_p99", refMetric: "latency_p99", max: 1.5, pinned: true},
	{name: "http.get vs wrk (requests/s, same pong)", ours: "http_get", ref: "wrk", metric: "requests_per_sec", refMetric: "requests_per_sec", min: 1.0},
	{name: "http.get vs wrk (requests/s, same nginx)", ours: "nginx_get", ref: "nginx_wrk", metric: "requests_per_sec", refMetric: "requests_per_sec", min: 1.0, nginx: true},
	{name: "http.get vs wrk (p99 latency, same nginx; reported)", ours: "nginx_get", ref: "nginx_wrk", metric: "latency_p99", refMetric: "latency_p99", nginx: true},
}

// pinning places a pinned comparison's two roles on CPUs. Unpinned, on a
// two-core machine, a request/response round trip takes ~8 µs when the
// scheduler happens to put client and server on one CPU and 50–80 µs when
// not, so a latency ratio would compare where the scheduler put each tool,
// not the tools: an earlier run gave net.tcp_rr 0.83–0.88× sockperf, a
// later one 0.47–0.54×.
type pinning struct{ name, server, client string }

// pinnings: both roles on CPU 0, and the server on 0 with the client on 1
// (on one CPU, only the first).
func pinnings(cpus int) []pinning {
	p := []pinning{{"same-core", "0", "0"}}
	if cpus >= 2 {
		p = append(p, pinning{"cross-core", "0", "1"})
	}
	return p
}

// unpinned is the pin level of the comparisons that are not pinned.
const unpinned = "none"

// experimentText is the campaign: every workload in every placement
// ("platform/network", expanded into those two factors with the rest of
// their cross product excluded); the pinned comparisons' workloads in each
// pinning, the others unpinned. Ours and the reference always share their
// cells' settings.
// nginx is the example nginx image's archive ("": no nginx comparisons).
func experimentText(reps int, dur string, placements []string, cpus int, nginx string) (string, error) {
	var plats, nets []string
	pairs := map[string]bool{}
	for _, pn := range placements {
		pl, nw, ok := strings.Cut(pn, "/")
		if !ok {
			return "", fmt.Errorf("placement %q: want platform/network", pn)
		}
		pairs[pn] = true
		if !slices.Contains(plats, pl) {
			plats = append(plats, pl)
		}
		if !slices.Contains(nets, nw) {
			nets = append(nets, nw)
		}
	}
	var excl []string
	for _, pl := range plats {
		for _, nw := range nets {
			if !pairs[pl+"/"+nw] {
				excl = append(excl, fmt.Sprintf("  - {platform: %s, network: %s}", pl, nw))
			}
		}
	}
	pins := pinnings(cpus)
	pin := []string{"  pin:", "    " + unpinned + ": {}"}
	for _, p := range pins {
		pin = append(pin, fmt.Sprintf("    %s: {server.cpuset: %q, client.cpuset: %q}", p.name, p.server, p.client))
	}
	for _, cmp := range comparisons {
		if cmp.nginx && nginx == "" {
			continue
		}
		for _, w := range []string{cmp.ours, cmp.ref} {
			if !cmp.pinned {
				for _, p := range pins {
					excl = append(excl, fmt.Sprintf("  - {workload: %s, pin: %s}", w, p.name))
				}
			} else {
				excl = append(excl, fmt.Sprintf("  - {workload: %s, pin: %s}", w, unpinned))
			}
		}
	}
	return fmt.Sprintf(`name: bench
seed: 20261122
repetitions: %d
warmup: 1
timeout: 2m
factors:
  platform: [%s]
  network: [%s]
%s
exclude:
%s
workloads:
%s
`, reps, strings.Join(plats, ", "), strings.Join(nets, ", "), strings.Join(pin, "\n"), strings.Join(excl, "\n"), strings.Join(workloads(dur, nginx), "\n")), nil
}

// workloads: the same parameters for ours and the reference.
func workloads(dur, nginx string) []string {
	w := []string{
		"  - {name: tcp_stream, type: net.tcp_stream, params: {duration: " + dur + ", message_size: 128KiB}}",
		"  - {name: iperf3, type: net.iperf3, params: {duration: " + dur + ", length: 128KiB}}",
		"  - {name: http_get, type: http.get, params: {duration: " + dur + ", size: 1KiB, concurrency: 8}}",
		"  - {name: wrk, type: http.wrk, params: {duration: " + dur + ", size: 1KiB, concurrency: 8, threads: 2}}",
		"  - {name: tcp_rr, type: net.tcp_rr, params: {duration: " + dur + ", request_size: 64, response_size: 64}}",
		"  - {name: sockperf, type: net.sockperf, params: {mode: ping-pong, protocol: tcp, msg_size: 64, duration: " + dur + "}}",
	}
	if nginx == "" {
		return w
	}
	// The same nginx, its 4 KiB file, 8 connections: driven by http.get
	// and by wrk (on this machine), whose p99 is read from --latency.
	d, _ := time.ParseDuration(dur)
	secs := strconv.Itoa(max(1, int(d.Round(time.Second).Seconds())))
	server := fmt.Sprintf("image_archive: %q, port: 8080, ready: {http: /index.html}", nginx)
	return append(w,
		"  - {name: nginx_get, type: service, params: {"+server+", client: {type: http.get, params: {path: /4k.bin, concurrency: 8, duration: "+secs+"s}}}}",
		"  - {name: nginx_wrk, type: service, params: {"+server+", client: {type: exec, params: {"+
			`command: [wrk, -t2, -c8, -d`+secs+`s, --latency, "http://{server.host}:{server.port}/4k.bin"], format: regex, metrics: {`+
			`requests_per_sec: {pattern: 'Requests/sec:\s+(?P<value>[0-9.]+)', unit: req/s, better: higher}, `+
			`latency_p99: {pattern: '^\s+99%\s+(?P<value>[0-9.]+)(?P<unit>us|ms|s)\b', unit: ms, better: lower}}}}}}`)
}

func main() {
	reps := flag.Int("reps", 5, "repetitions per cell")
	dur := flag.String("duration", "3s", "duration of each trial")
	bin := flag.String("bin", "bin/ctrbench", "the static ctrbench binary (agent)")
	execReps := flag.Int("exec-reps", 10, "exec trials of a trivial command in Docker, against as many docker run --rm, twice each (0: skip)")
	httpd := flag.String("httpd", "images/httpd.tar", "the example busybox image (scripts/images.sh) the exec comparison runs")
	nginx := flag.String("nginx", "images/nginx.tar", "the example nginx image (scripts/images.sh) that http.get and wrk both drive (empty: skip)")
	places := flag.String("placements", "native/host,docker/bridge", "comma-separated platform/network pairs")
	adaptiveMax := flag.Int("adaptive-max", 20, "adaptive repetition: the fixed run's repetitions and the adaptive run's max (0: skip)")
	adaptiveRCI := flag.String("adaptive-rci", "3%", "adaptive repetition: the target half-width")
	compare := flag.Bool("compare", true, "run the side-by-side comparisons (false: only the adaptive saving)")
	aaReps := flag.Int("aa-reps", 5, "A/A: the mixed experiment twice with this n, compared as ctrbench compare does (0: skip)")
	fan := flag.Int("fanout", 100, "containers created at once, ctrbench against the docker CLI (0: skip)")
	fanReps := flag.Int("fanout-reps", 5, "runs of each side of the fan-out comparison")
	children := flag.Int("children", 256, "children to try in one nested parent, halved until it completes (0: skip)")
	scales := flag.String("scale", "50,100", "comma-separated pair counts, one tcp_stream trial each on the bridge: set-up, tear-down, overlap and the harness's CPU use (empty: skip)")
	scaleDur := flag.String("scale-duration", "10s", "duration of each scale trial's run")
	lineReps := flag.Int("delay-line-reps", 3, "runs of eight iperf3 flows through the kernel and through the delay line, for its ceiling (0: skip)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *compare {
		if err := run(ctx, *reps, *dur, *bin, *nginx, strings.Split(*places, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	for _, step := range []struct {
		on bool
		do func() error
	}{
		{*scales != "", func() error {
			var sizes []int
			for _, f := range strings.Split(*scales, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					return fmt.Errorf("-scale: %q is not a number of pairs", f)
				}
				sizes = append(sizes, n)
			}
			return scale(ctx, abs, sizes, *scaleDur)
		}},
		{*execReps > 0, func() error { return execCost(ctx, abs, *httpd, *execReps) }},
		{*lineReps > 0, func() error { return delayLineCeiling(ctx, *lineReps, 5) }},
		{*fan > 0, func() error { return fanOut(ctx, abs, *fan, *fanReps) }},
		{true, func() error { return idleRSS(ctx, abs) }},
		{*children > 0, func() error { return mostChildren(ctx, abs, *children) }},
		{*aaReps > 0, func() error { return aaCompare(ctx, abs, *aaReps) }},
	} {
		if !step.on {
			continue
		}
		if err := step.do(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if *adaptiveMax > 0 {
		abs, err := filepath.Abs(*bin)
		if err == nil {
			err = adaptiveSaving(ctx, abs, *adaptiveMax, *adaptiveRCI)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

func run(ctx context.Context, reps int, dur, bin, nginx string, placements []string) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if nginx != "" {
		if nginx, err = filepath.Abs(nginx); err != nil {
			return err
		}
		if _, err := os.Stat(nginx); err != nil {
			return fmt.Errorf("-nginx: %w (scripts/images.sh builds it; make bench runs it)", err)
		}
	}
	text, err := experimentText(reps, dur, placements, runtime.NumCPU(), nginx)
	if err != nil {
		return err
	}
	e, err := spec.Parse("bench.yaml", []byte(text), nil, spec.Machine{})
	if err != nil {
		return err
	}
	cells := e.Cells()
	var trials []result.Trial
	fmt.Fprintf(os.Stderr, "bench: %d cells x (%d + 1 warm-up) trials of %s each\n", len(cells), reps, dur)
	start := time.Now()
	_, err = orchestrator.Run(ctx, orchestrator.Config{
		Experiment: e, CampaignID: fmt.Sprintf("bench-%d", os.Getpid()), Cells: cells, Binary: abs,
		Sink:     func(_ context.Context, t result.Trial) error { trials = append(trials, t); return nil },
		Progress: orchestrator.NewProgress(os.Stderr, false),
	})
	if err != nil {
		return err
	}
	return print(ctx, cells, trials, time.Since(start))
}

// print groups the trials through analysis, as a report would, and writes
// one line per comparison and placement.
func print(ctx context.Context, cells []result.Cell, trials []result.Trial, took time.Duration) error {
	const id = "bench"
	src := analysis.NewMemory(result.Campaign{ID: id}, cells, trials)
	loaded, err := analysis.Load(ctx, src, analysis.Query{Campaign: id})
	if err != nil {
		return err
	}
	type key struct {
		workload, placement string
		metric              result.MetricID
	}
	series := map[key]analysis.Series{}
	var placements []string
	for _, s := range loaded.Series {
		pl := s.Cell["platform"] + "/" + s.Cell["network"]
		if pin := s.Cell["pin"]; pin != "" && pin != unpinned {
			pl += fmt.Sprintf(" %s (server cpu %s, client cpu %s)", pin, s.Cell["server.cpuset"], s.Cell["client.cpuset"])
		}
		if !slices.Contains(placements, pl) {
			placements = append(placements, pl)
		}
		series[key{s.Workload, pl, s.ID}] = s
	}
	failures, err := analysis.LoadFailures(ctx, src, id)
	if err != nil {
		return err
	}
	failed := 0
	for _, f := range failures.Trials {
		if f.Warmup {
			continue
		}
		failed++
		fmt.Fprintf(os.Stderr, "bench: trial %d failed: %s\n", f.Seq, f.Error)
	}
	measure := func(name string) result.MetricID { return result.Observation{Metric: name}.ID() }
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "comparison\tplacement\tours (mean)\treference (mean)\tratio\t95% CI\ttarget\tverdict")
	for _, cmp := range comparisons {
		for _, pl := range placements {
			ours, ref := series[key{cmp.ours, pl, measure(cmp.metric)}], series[key{cmp.ref, pl, measure(cmp.refMetric)}]
			if len(ours.Values) == 0 || len(ref.Values) == 0 {
				continue
			}
			j := judge(ours.Values, ref.Values, cmp.min, cmp.max)
			fmt.Fprintf(w, "%s\t%s\t%.4g %s\t%.4g %s\t%.3f\t%s\t%s\t%s\n", cmp.name, pl, j.ours, ours.Unit, j.ref, ref.Unit, j.ratio, j.ci, j.target, j.verdict)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Printf("\n%d trials in %s, %d failed. Ratio = mean(ours)/mean(reference); interval: log-ratio delta method, Welch df.\n", len(trials), took.Round(time.Second), failed)
	return nil
}
