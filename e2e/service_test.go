package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// serviceExperiment runs real servers nobody here wrote as users'
// services: redis driven by redis-benchmark (an exec client), and busybox
// httpd driven by ctrbench's HTTP generator; the server in Docker on the
// campaign's bridge or as a host process, the client as a host process or
// in Docker — "my server in Docker, the load generator on the host" is one
// factor.
const serviceExperiment = `name: e2e-service
seed: 9
repetitions: 1
timeout: 90s
factors:
  server.platform: [native, docker]
  server.network: [host, bridge]
  client.platform: [native, docker]
exclude:
  - {server.platform: native, server.network: bridge}
workloads:
  - name: kv
    type: service
    params:
      command: [redis-server, --port, "16379", --save, "", --appendonly, "no", --protected-mode, "no"]
      port: 16379
      client:
        type: exec
        params:
          command: [redis-benchmark, -h, "{server.host}", -p, "{server.port}", -n, "20000", -c, "8", -t, "set,get", -q, --csv]
          format: csv
          metrics:
            set_rps: {select: 'SET,rps', unit: req/s, better: higher}
            get_rps: {select: 'GET,rps', unit: req/s, better: higher}
  - name: web
    type: service
    params:
      command: [sh, -c, 'printf "hello from a user server\n%.0s" $(seq 50) > index.html && exec busybox httpd -f -p 18080 -h .']
      tools: [busybox, seq]
      port: 18080
      ready: {http: /index.html}
      client: {type: http.get, params: {path: /index.html, concurrency: 4, duration: 500ms}}
`

func TestServiceAcrossPlacements(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, serviceExperiment)
	cells := cellFactors(t, db, id)
	seen := map[string]int{}
	placement := func(tr result.Trial) string {
		f := cells[tr.CellID]
		return f["server.platform"] + "/" + f["server.network"] + " <- " + f["client.platform"]
	}
	for _, tr := range okOf(t, storedTrials(t, db, id), placement) {
		where := placement(tr)
		m := trialMeasures(tr)
		if _, ok := m["set_rps"]; ok {
			// 20000 SETs then 20000 GETs at the rates redis-benchmark
			// printed take at least that long by the agent's clock.
			if least := 20000/m["set_rps"] + 20000/m["get_rps"]; m["wall_time"] < 0.9*least {
				t.Errorf("trial %d (%s): wall time %.3f s, but the printed rates need %.3f s", tr.Seq, where, m["wall_time"], least)
			}
		} else if m["requests_per_sec"] <= 0 || m["errors"] != 0 || m["transfer_rate"]*1e6/m["requests_per_sec"] < 1000 {
			t.Errorf("trial %d (%s): implausible HTTP metrics %v", tr.Seq, where, m)
		}
		seen[where]++
	}
	for _, where := range []string{"native/host <- native", "native/host <- docker", "docker/host <- native", "docker/host <- docker", "docker/bridge <- native", "docker/bridge <- docker"} {
		if seen[where] != 2 { // 2 services, 1 repetition
			t.Errorf("%s: %d ok trials, want 2", where, seen[where])
		}
	}
}

// A server that dies mid-trial fails the trial with its own exit status
// and log first, the client's errors after; the campaign goes on, and
// nothing is left running.
func TestServiceServerDiesMidTrial(t *testing.T) {
	exp := writeExperiment(t, `name: e2e-service-dies
seed: 1
repetitions: 1
timeout: 60s
workloads:
  - name: dies
    type: service
    params:
      command: [sh, -c, 'echo hello > index.html; busybox httpd -f -p 18086 -h . & P=$!; sleep 1; echo giving up; kill $P; exit 9']
      tools: [busybox]
      port: 18086
      client: {type: http.get, params: {path: /index.html, duration: 3s, concurrency: 2}}
  - name: lives
    type: exec
    params:
      command: ["true"]
`)
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 2*time.Minute, "run", exp, "--db", db, "--no-report")
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (trials failed)\n%s", r.code, r.stderr)
	}
	var ok, failed int
	for _, tr := range storedTrials(t, db, id) {
		switch tr.Status {
		case "ok":
			ok++
		default:
			failed++
			if !strings.HasPrefix(tr.Error, "the server failed: ") || !strings.Contains(tr.Error, "exit status 9") || !strings.Contains(tr.Raw+tr.Error, "giving up") {
				t.Errorf("the failed trial says: %s\nraw: %s", tr.Error, tr.Raw)
			}
		}
	}
	if ok != 1 || failed != 1 {
		t.Errorf("%d ok, %d failed: want the exec trial ok and the service's failed", ok, failed)
	}
	if out, _ := exec.Command("pgrep", "-f", "httpd -f -p 18086").Output(); len(out) > 0 {
		t.Errorf("the dead server's child is still running: %s", out)
	}
}
