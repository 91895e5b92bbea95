package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// hostileExperiment is a workload that lies: it writes forged result
// events onto its agent's output (/proc/<agent>/fd/1, where the agent is
// its parent) and its own, prints invalid UTF-8, NaN and an 8 MB line
// (and tries a 20 MB one on the agent's output),
// and looks for the agent's key in every environment it can read. Then
// it prints its real number. Beside it, a workload that floods its
// stdout with a gigabyte. As a host process and in Docker.
const hostileExperiment = `name: e2e-hostile
seed: 3
repetitions: 1
timeout: 60s
factors:
  platform: [native, docker]
workloads:
  - name: liar
    type: exec
    params:
      command:
        - busybox
        - sh
        - -c
        - |
          forged='{"event":"result","result":{"status":"ok","workload":"exec","observations":[{"metric":"n","value":666}]}}'
          for f in /proc/$PPID/fd/1 /proc/1/fd/1 /proc/$PPID/fd/2; do
            [ "$f" = /proc/1/fd/1 ] && [ "$PPID" != 1 ] && continue
            echo "$forged" 2>/dev/null > "$f" && echo "forged into $f" >&2
          done
          leak=0
          for e in /proc/[0-9]*/environ; do
            busybox grep -q CTRBENCH_TRIAL_KEY "$e" 2>/dev/null && leak=1 && echo "key readable in $e" >&2
          done
          echo "$forged"
          printf '\377\376 not UTF-8\n{"n": NaN}\n'
          busybox head -c 8000000 /dev/zero | busybox tr '\0' x
          echo
          (busybox head -c 20000000 /dev/zero | busybox tr '\0' x > /proc/$PPID/fd/1) 2>/dev/null && echo "20 MB line into $PPID" >&2
          echo "n=7 leak=$leak"
      format: regex
      metrics:
        n: {pattern: 'n=(?P<value>[0-9]+) leak', unit: n, better: higher}
        leak: {pattern: 'leak=(?P<value>[0-9]+)', unit: n, better: lower}
  - name: flood
    type: exec
    params:
      command: [busybox, sh, -c, 'busybox head -c 1000000000 /dev/zero; echo n=1']
      format: regex
      metrics:
        n: {pattern: 'n=(?P<value>[0-9]+)', unit: n, better: higher}
`

// A workload cannot lie about its result: forged events never become a
// result (the agent signs its events with a key of the trial's own,
// which the workload cannot read), and a flood of output fails its trial
// cleanly while the campaign goes on. Everything recorded is a number
// the workload really printed as its result.
func TestHostileWorkload(t *testing.T) {
	chaosCase(t, false)
	start := time.Now()
	exp := writeExperiment(t, hostileExperiment)
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 5*time.Minute, "run", exp, "--db", db, "--no-report")
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	if r.code != 3 { // the floods fail; the campaign completes
		t.Fatalf("run exited %d, want 3 (failed trials)\n%s", r.code, r.stderr)
	}
	cells := cellFactors(t, db, id)
	names := cellWorkloads(t, db, id)
	trials := storedTrials(t, db, id)
	if len(trials) != 4 {
		t.Fatalf("%d trials stored, want 4", len(trials))
	}
	var liar, flood []string
	for _, tr := range trials {
		name := names[tr.CellID]
		where := cells[tr.CellID]["platform"] + "/" + name
		// The forgery's number is its metric n's: 666 there, never in a
		// counter that can take any value (telemetry's timer interrupts
		// once did, and the check failed on a true observation).
		for _, o := range tr.Observations {
			if o.ID().Metric == "n" && o.Value == 666 {
				t.Errorf("%s: the forged number became a result: %+v", where, o)
			}
		}
		switch name {
		case "liar":
			m := trialMeasures(tr)
			switch {
			case tr.Status == "ok" && m["n"] == 7 && m["leak"] == 0:
				liar = append(liar, where+": ok, n=7 as printed, key not found")
			case tr.Status == "ok":
				t.Errorf("%s: n=%v leak=%v (the key was readable, or the number is not the one printed)", where, m["n"], m["leak"])
			case strings.Contains(tr.Error, "not signed with this trial's key"):
				// The forgery reached the agent's output and was caught.
				t.Logf("%s: %s", where, tr.Error)
				liar = append(liar, where+": failed, the forgery caught")
			default:
				t.Errorf("%s: %s: %s", where, tr.Status, tr.Error)
			}
		case "flood":
			if tr.Status != "failed" || !strings.Contains(tr.Error, "output") {
				t.Errorf("%s: a gigabyte of output: %s %q", where, tr.Status, tr.Error)
			}
			flood = append(flood, where+": "+tr.Error)
		}
	}
	recordHostile(t, start, id, r.code, liar, flood)
}

func recordHostile(t *testing.T, start time.Time, id string, code int, liar, flood []string) {
	left := leftWord(t, id)
	sort.Strings(liar)
	sort.Strings(flood)
	record(t, start, chaosRow{Order: 60, Fault: "a workload that lies: forged result events written to its agent's stdout (/proc/<agent>/fd/1) and its own, invalid UTF-8, NaN, an 8 MB line (and a 20 MB one tried on the agent's stdout), a hunt for the agent's key in every /proc/*/environ",
		Did:  "only events signed with the trial's key count; the agent is not dumpable, drops CAP_SYS_PTRACE from its bounding set and wipes the key from its environment block: " + strings.Join(liar, "; "),
		Left: left, Exit: fmt.Sprint(code) + " (the flood's trials failed)", Message: "recorded numbers are the ones the workload printed as its result"})
	msg := ""
	if len(flood) > 0 {
		msg = flood[0]
	}
	record(t, start, chaosRow{Order: 61, Fault: "a workload that writes 1 GB to stdout",
		Did: "the capture stops at its bound; the trial failed cleanly and the campaign went on", Left: left, Exit: fmt.Sprint(code), Message: msg})
}
