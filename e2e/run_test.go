package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const tiny = `
name: e2e-tiny
seed: 7
repetitions: 2
warmup: 1
timeout: 60s
factors:
  platform: [native, docker]
  network: [host, bridge]
exclude:
  - {platform: native, network: bridge}
baseline: {platform: native, network: host}
workloads:
  - {name: cpu, type: cpu.primes, params: {max_prime: 3000, duration: 300ms}}
  - {name: tcp, type: net.tcp_stream, params: {duration: 300ms, message_size: 64KiB}}
`

type row struct {
	Campaign      string            `json:"campaign"`
	Workload      string            `json:"workload"`
	WorkloadType  string            `json:"workload_type"`
	Metric        string            `json:"metric"`
	Unit          string            `json:"unit"`
	Better        string            `json:"better"`
	Cell          map[string]string `json:"cell"`
	N             int               `json:"n"`
	Mean          float64           `json:"mean"`
	SD            *float64          `json:"sd"`
	RSDPct        *float64          `json:"rsd_pct"`
	CI95          []*float64        `json:"ci95"`
	VsBaselinePct *float64          `json:"vs_baseline_pct"`
	Baseline      bool              `json:"baseline"`
}

// TestRunThenReportJSON runs a tiny experiment over native and docker (host
// and bridge) and reads the report back as JSON.
func TestRunThenReportJSON(t *testing.T) {
	requireDocker(t)
	db := filepath.Join(t.TempDir(), "r.db")
	exp := writeExperiment(t, tiny)
	r := ctrbench(t, 5*time.Minute, "run", exp, "--db", db, "--no-report")
	if r.code != 0 {
		t.Fatalf("run exited %d\nstderr:\n%s", r.code, r.stderr)
	}
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)

	rep := ctrbench(t, time.Minute, "report", "--db", db, "--format", "json")
	if rep.code != 0 {
		t.Fatalf("report exited %d: %s", rep.code, rep.stderr)
	}
	var rows []row
	if err := json.Unmarshal([]byte(rep.stdout), &rows); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, rep.stdout)
	}
	// 3 cells x (3 cpu metrics + 2 tcp metrics), plus telemetry rows.
	var metrics []row
	telemetry := map[string]bool{}
	for _, x := range rows {
		if strings.Contains(x.Metric, "telemetry.") {
			telemetry[x.Workload+" "+x.Cell["platform"]+"/"+x.Cell["network"]+" "+x.Metric] = true
			continue
		}
		metrics = append(metrics, x)
	}
	if len(metrics) != 15 {
		t.Fatalf("want 15 metric rows, got %d", len(metrics))
	}
	// Every placement reports the agent's CPU time; containers their cgroup
	// counters; only a bridge container its own TCP counters.
	for _, want := range []string{"cpu native/host telemetry.cpu_seconds", "cpu docker/host telemetry.memory_peak_bytes", "tcp docker/bridge telemetry.tcp_out_segs"} {
		if !telemetry[want] {
			t.Errorf("no telemetry row %q", want)
		}
	}
	for _, unwanted := range []string{"cpu native/host telemetry.memory_peak_bytes", "tcp docker/host telemetry.tcp_out_segs", "tcp native/host telemetry.tcp_out_segs"} {
		if telemetry[unwanted] {
			t.Errorf("telemetry %q is not the instance's own and must not be reported", unwanted)
		}
	}
	seen := map[string]bool{}
	for _, x := range metrics {
		key := fmt.Sprintf("%s/%s/%s/%s", x.Workload, x.Metric, x.Cell["platform"], x.Cell["network"])
		seen[key] = true
		if x.Campaign != id {
			t.Errorf("%s: campaign %q, want %q", key, x.Campaign, id)
		}
		if x.N != 2 {
			t.Errorf("%s: n=%d, want 2 (warm-up must not count)", key, x.N)
		}
		if !(x.Mean > 0) || math.IsInf(x.Mean, 0) {
			t.Errorf("%s: mean %v", key, x.Mean)
		}
		if x.Better != "higher" && x.Better != "lower" {
			t.Errorf("%s: better %q", key, x.Better)
		}
		if len(x.CI95) != 2 || x.CI95[0] == nil || x.CI95[1] == nil || *x.CI95[0] > x.Mean || *x.CI95[1] < x.Mean {
			t.Errorf("%s: ci95 %v does not bracket the mean %v", key, x.CI95, x.Mean)
		}
		isBase := x.Cell["platform"] == "native" && x.Cell["network"] == "host"
		if x.Baseline != isBase {
			t.Errorf("%s: baseline=%v", key, x.Baseline)
		}
		if isBase && x.VsBaselinePct != nil {
			t.Errorf("%s: the baseline has vs_baseline_pct %v, want null", key, *x.VsBaselinePct)
		}
		if !isBase && x.VsBaselinePct == nil {
			t.Errorf("%s: vs_baseline_pct is null", key)
		}
	}
	for _, want := range []string{"cpu/events_per_sec/docker/bridge", "tcp/throughput/native/host", "tcp/throughput/docker/bridge"} {
		if !seen[want] {
			t.Errorf("no row %s", want)
		}
	}

	// The other formats render the same campaign.
	tab := ctrbench(t, time.Minute, "report", "--db", db)
	contains(t, "table report", tab.stdout, "cpu (cpu.primes)", "events_per_sec", "(baseline)", "95% CI")
	csv := ctrbench(t, time.Minute, "report", "--db", db, "--format", "csv")
	contains(t, "csv report", csv.stdout, "f:network", "f:platform", "ci95_low")
}

// TestInvalidFileStartsNothing: a malformed file exits 2 with file:line
// messages for every problem, and creates neither a database nor a container.
func TestInvalidFileStartsNothing(t *testing.T) {
	requireDocker(t)
	db := filepath.Join(t.TempDir(), "r.db")
	exp := writeExperiment(t, `name: bad
repetiton: 3
factors:
  platform: [native, dockr]
workloads:
  - {type: cpu.primes, params: {max_prime: lots, colour: blue}}
`)
	r := ctrbench(t, time.Minute, "run", exp, "--db", db)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	contains(t, "stderr", r.stderr,
		exp+":2:1: unknown key \"repetiton\"",
		exp+":4:22: level \"dockr\" of platform: allowed: native, docker",
		"max_prime", "\"lots\" is not an integer",
		"unknown parameter \"colour\" for cpu.primes; allowed: max_prime, threads, duration",
		"4 problem(s); nothing was started")
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a rejected experiment must not create the database (stat: %v)", err)
	}
}

// TestFailuresAreTrialsAndCampaignGoesOn: a timeout and a failing tool are
// failed trials with reasons; the other cells still run; exit status 3.
func TestFailuresAreTrialsAndCampaignGoesOn(t *testing.T) {
	requireDocker(t)
	db := filepath.Join(t.TempDir(), "r.db")
	exp := writeExperiment(t, `name: e2e-failures
seed: 1
repetitions: 1
timeout: 3s
factors:
  platform: [docker]
  network: [bridge]
workloads:
  - {name: hangs, type: cpu.primes, params: {duration: 1h}}
  - {name: bad-iperf, type: net.iperf3, params: {protocol: udp, length: 70000, duration: 1s}}
  - {name: fine, type: cpu.primes, params: {duration: 200ms, max_prime: 2000}}
`)
	r := ctrbench(t, 3*time.Minute, "run", exp, "--db", db)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	contains(t, "stderr", r.stderr, "1 trials ok, 2 failed")
	f := ctrbench(t, time.Minute, "report", "--db", db, "--failures")
	contains(t, "failures", f.stdout, "timeout", "timed out after 3s", "hangs", "2 failed trial(s)")
	// The iperf3 trial must fail for its own reason (iperf3 rejects the
	// bitrate), not time out.
	contains(t, "failures", f.stdout, "bad-iperf", "iperf3", "block size invalid")
}

// TestImageBuildIsContentAddressed: building twice reuses the image.
func TestImageBuildIsContentAddressed(t *testing.T) {
	requireDocker(t)
	first := ctrbench(t, 2*time.Minute, "image", "build")
	if first.code != 0 {
		t.Fatalf("image build exited %d: %s", first.code, first.stderr)
	}
	contains(t, "image build", first.stdout, "ctrbench-agent:")
	second := ctrbench(t, 2*time.Minute, "image", "build")
	contains(t, "second image build", second.stdout, "reused: true")
	tag := strings.Fields(first.stdout)[0]
	contains(t, "second image build", second.stdout, tag)
}
