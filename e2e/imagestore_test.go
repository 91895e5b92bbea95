package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/result"
)

// Issue 38: the engine's image store as a factor of creation time. With a
// command that restarts the engine with a given store
// (CTRBENCH_ENGINE_RESTART, which scripts/docker-engine.sh sets for its
// Docker 28), ctrbench restarts it between cells of different stores,
// outside any trial's timings, and every trial's containers were made in
// the store its cell asks; without one, the file is refused before
// anything starts, saying why: ctrbench never restarts the machine's
// engine by itself.
func TestImageStore(t *testing.T) {
	requireDocker(t)
	src := `name: e2e-image-store
seed: 38
repetitions: 2
warmup: 0
timeout: 2m
factors:
  platform: [docker]
  image_store: [overlay2, containerd]
  instances: [2]
workloads:
  - {name: create, type: lifecycle.run}
`
	if os.Getenv(docker.EngineRestartEnv) == "" {
		r := ctrbench(t, time.Minute, "run", writeExperiment(t, src), "--db", t.TempDir()+"/r.db")
		if r.code != 2 || !strings.Contains(r.stderr, "never restarts the machine's engine by itself") || strings.Contains(r.stderr, "campaign ") {
			t.Errorf("without %s: exit %d, want 2 before anything starts, saying why:\n%s", docker.EngineRestartEnv, r.code, r.stderr)
		}
		return
	}
	db, id := runStored(t, src)
	store := map[int]string{}
	for _, c := range storedCells(t, db, id) {
		store[c.ID] = c.Factors["image_store"]
	}
	for _, tr := range okTrials(t, db, id, 4, func(tr result.Trial) string { return store[tr.CellID] }) {
		if got := tr.Seen["platform."+docker.SeenImageStore]; got != store[tr.CellID] {
			t.Errorf("trial %d: its containers were made in image store %q, its cell asks %q (seen %v)", tr.Seq, got, store[tr.CellID], tr.Seen)
		}
		m := trialMeasures(tr)
		t.Logf("%s: create p50 %.3f s, start p50 %.3f s, total p50 %.3f s", store[tr.CellID], m["create_p50"], m["start_p50"], m["total_p50"])
	}
}
