package e2e

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// execExperiment runs a real tool nobody here wrote (sysbench) through
// exec, its numbers read from its own text by regular expressions, and a
// shell that prints the trial's number through the {trial} placeholder:
// as a host process, in Docker on the host and bridge networks, in podman
// and in LXC. The programs come from this machine, put into the agent
// image with their libraries.
const execExperiment = `name: e2e-exec
seed: 5
repetitions: 1
timeout: 60s
factors:
  platform: [native, docker, podman, lxc]
  network: [host, bridge]
exclude:
  - {platform: native, network: bridge}
workloads:
  - name: sb
    type: exec
    params:
      command: [sysbench, cpu, --cpu-max-prime=5000, --time=1, --events=0, run]
      format: regex
      metrics:
        eps: {pattern: 'events per second:\s+(?P<value>[0-9.]+)', unit: events/s, better: higher}
        events: {pattern: 'total number of events:\s+(?P<value>[0-9]+)', unit: events, better: higher}
        total: {pattern: 'total time:\s+(?P<value>[0-9.]+)s', unit: s, better: lower}
  - name: tag
    type: exec
    params:
      command: [sh, -c, 'echo "{\"trial\": {trial}}"']
      metrics:
        trial: {path: trial, unit: n, better: higher}
`

func TestExecEverywhere(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, execExperiment)
	cells := cellFactors(t, db, id)
	seen := map[string]int{}
	placement := func(tr result.Trial) string { return cells[tr.CellID]["platform"] + "/" + cells[tr.CellID]["network"] }
	for _, tr := range okOf(t, storedTrials(t, db, id), placement) {
		where := placement(tr)
		m := trialMeasures(tr)
		if !strings.HasPrefix(tr.Seen["command"], `["sysbench"`) && !strings.HasPrefix(tr.Seen["command"], `["sh"`) {
			t.Errorf("trial %d (%s): the command that ran is not recorded: %q", tr.Seq, where, tr.Seen["command"])
		}
		if _, ok := m["trial"]; ok {
			// The placeholder was bound to this trial's own number.
			if m["trial"] != float64(tr.Seq) {
				t.Errorf("trial %d (%s) printed trial %v", tr.Seq, where, m["trial"])
			}
		} else {
			// sysbench's events per second is its events over the time
			// from its start to its report, which comes after its total
			// time ends (its threads joined; later on a busy machine) and
			// before the command's wall time does, each as printed (4 and
			// 2 decimals; 1% for the clocks' start).
			interval := m["events"] / m["eps"]
			if m["events"] <= 0 || m["total"] < 0.9 || interval < 0.99*m["total"] || interval > m["wall_time"] {
				t.Errorf("trial %d (%s): eps %v, events %v (%.4f s of events), total %v s, wall time %v s disagree", tr.Seq, where, m["eps"], m["events"], interval, m["total"], m["wall_time"])
			}
		}
		if m["wall_time"] <= 0 {
			t.Errorf("trial %d (%s): no wall time", tr.Seq, where)
		}
		seen[where]++
	}
	for _, where := range []string{"native/host", "docker/host", "docker/bridge", "podman/host", "podman/bridge", "lxc/host", "lxc/bridge"} {
		if seen[where] != 2 { // 2 workloads, 1 repetition
			t.Errorf("%s: %d ok trials, want 2", where, seen[where])
		}
	}
}
