package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	"github.com/ctrbench/ctrbench/internal/workload"
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

// smokeExperiment lists every registered workload with its smoke parameters.
func smokeExperiment(name, factors string, types []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nseed: 11\nrepetitions: 1\ntimeout: 90s\n%s\nworkloads:\n", name, factors)
	for _, typ := range types {
		s, _ := workload.Lookup(typ)
		var params []string
		for _, k := range sortedKeys(s.Smoke) {
			if p, _ := s.Param(k); p.Kind.Structured() {
				params = append(params, fmt.Sprintf("%s: %s", k, s.Smoke[k])) // JSON is YAML
				continue
			}
			params = append(params, fmt.Sprintf("%s: %q", k, s.Smoke[k]))
		}
		fmt.Fprintf(&b, "  - {name: %s, type: %s, params: {%s}}\n", typ, typ, strings.Join(params, ", "))
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// everyPlacement is every placement TestEveryWorkloadEverywhere knows.
var everyPlacement = []string{"native/host", "docker/host", "docker/bridge", "nested/host", "podman/host", "podman/bridge", "lxc/host", "lxc/bridge"}

// placementsOf are the placements workload number i runs in: make test
// runs each workload once, in the eight placements in turn, so every
// placement runs about an eighth of the workloads (every workload and
// every platform runs); with CTRBENCH_E2E_FULL=1 (make test-full), all
// eight.
func placementsOf(i int) []string {
	if full() {
		return everyPlacement
	}
	return []string{everyPlacement[i%len(everyPlacement)]}
}

// TestEveryWorkloadEverywhere runs every registered workload, with its
// smoke parameters, as a host process, in Docker on the host and bridge
// networks, in nested children (each role a child of a parent of its
// own), in podman and in LXC containers on both networks (podman's bridge
// its own network, CNI here) (see
// placementsOf): each must produce validated results in every placement.
func TestEveryWorkloadEverywhere(t *testing.T) {
	requireDocker(t)
	types := workload.Types()
	var excl strings.Builder
	want := map[string]bool{}
	for i, typ := range types {
		chosen := placementsOf(i)
		for _, pl := range everyPlacement {
			platform, network, _ := strings.Cut(pl, "/")
			if slices.Contains(chosen, pl) {
				want[typ+" "+pl] = true
			} else if pl != "native/bridge" {
				fmt.Fprintf(&excl, "\n  - {workload: %s, platform: %s, network: %s}", typ, platform, network)
			}
		}
	}
	exp := writeExperiment(t, smokeExperiment("e2e-every-workload", `factors:
  platform: [native, docker, nested, podman, lxc]
  network: [host, bridge]
exclude:
  - {platform: native, network: bridge}
  - {platform: nested, network: bridge}`+excl.String(), types))
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 20*time.Minute, "run", exp, "--db", db, "--no-report")
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	if r.code != 0 {
		f := ctrbench(t, time.Minute, "report", "--db", db, "--failures")
		t.Fatalf("run exited %d\n%s", r.code, f.stdout)
	}
	rep := ctrbench(t, time.Minute, "report", "--db", db, "--format", "json")
	var rows []row
	if err := json.Unmarshal([]byte(rep.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, x := range rows {
		if x.N == 1 {
			got[x.WorkloadType+" "+x.Cell["platform"]+"/"+x.Cell["network"]] = true
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("%s: no result", k)
		}
	}
	t.Logf("%d workload types in %d placements", len(types), len(want))
}

// TestPingPongAcrossPlacements puts each role of the ping-pong chain in a
// different place: pong a host process, ping in a bridge container, the
// load generator in a host-network container.
func TestPingPongAcrossPlacements(t *testing.T) {
	requireDocker(t)
	exp := writeExperiment(t, `name: e2e-pingpong-placement
seed: 2
repetitions: 1
factors:
  pong.platform: [native]
  ping.platform: [docker]
  ping.network: [bridge]
  client.platform: [docker, native]
workloads:
  - {type: http.pingpong, params: {duration: 500ms, size: 64KiB, concurrency: 4}}
`)
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 5*time.Minute, "run", exp, "--db", db, "--format", "json")
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	if r.code != 0 {
		f := ctrbench(t, time.Minute, "report", "--db", db, "--failures")
		t.Fatalf("run exited %d\n%s\n%s", r.code, r.stderr, f.stdout)
	}
	contains(t, "report", r.stdout, `"pong.platform": "native"`, `"ping.network": "bridge"`, `"metric": "transfer_rate"`)
}
