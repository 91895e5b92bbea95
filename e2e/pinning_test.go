package e2e

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
)

// TestPinningPlaces: three client/server pairs — more than this machine's
// cores — on host processes and Docker containers, for every pinning
// level; each agent's own CPU affinity, read back inside, is the core
// pinning gave it, and each trial records its hosting entities per core.
func TestPinningPlaces(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-pinning
seed: 13
repetitions: 1
factors:
  platform: [native, docker]
  network: [host]
  pairs: [3]
  pinning: [none, same-core, separate-cores, spread]
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 300ms}}
`)
	trials := storedTrials(t, db, id)
	factors := cellFactors(t, db, id)
	if len(trials) != 8 {
		t.Fatalf("%d trials, want 8", len(trials))
	}
	n := runtime.NumCPU()
	pinning := func(tr result.Trial) string {
		return factors[tr.CellID]["platform"] + "/" + factors[tr.CellID]["pinning"]
	}
	for _, tr := range okOf(t, trials, pinning) {
		f, what := factors[tr.CellID], pinning(tr)
		if got, want := tr.Seen["placement.entities_per_core"], strconv.FormatFloat(6/float64(n), 'f', 3, 64); got != want {
			t.Errorf("%s: %s entities per core, want %s (6 on %d cores)", what, got, want, n)
		}
		for p := 0; p < 3; p++ {
			for j, role := range []string{"server", "client"} {
				var want string
				switch f["pinning"] {
				case "none":
					if _, ok := tr.Seen[fmt.Sprintf("placement.pair%d.%s.pinned", p+1, role)]; ok {
						t.Errorf("%s: pair %d %s pinned without pinning", what, p+1, role)
					}
					continue
				case "same-core":
					want = strconv.Itoa(p % n)
				default:
					want = strconv.Itoa((p*2 + j) % n)
				}
				key := fmt.Sprintf("placement.pair%d.%s", p+1, role)
				if tr.Seen[key+".pinned"] != want || tr.Seen[key+".ran_on"] != want {
					t.Errorf("%s pair %d %s: pinned %q, ran on %q, want core %s", what, p+1, role, tr.Seen[key+".pinned"], tr.Seen[key+".ran_on"], want)
				}
			}
		}
	}
}
