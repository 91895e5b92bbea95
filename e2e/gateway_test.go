package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/result"
)

// Issue 38: Docker 28's bridge gateway modes as network levels. On an
// engine that has them, a server container on a routed and on a
// nat-unprotected bridge of the campaign is reached by a host process at
// its own address, each bridge made in its mode with its own subnet of
// the pool; on an older engine the file is refused before anything
// starts, naming the engine's version.
func TestGatewayModes(t *testing.T) {
	requireDocker(t)
	src := `name: e2e-gateway
seed: 38
repetitions: 1
warmup: 0
timeout: 1m
factors:
  server.network: [bridge, routed, nat-unprotected]
  server.platform: [docker]
  client.platform: [native]
baseline: {server.network: bridge}
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}
`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	facts, err := eng.Facts(ctx)
	eng.Close()
	if err != nil {
		t.Fatal(err)
	}
	if why := facts.HasGatewayModes(); why != nil {
		r := ctrbench(t, time.Minute, "run", writeExperiment(t, src), "--db", t.TempDir()+"/r.db")
		if r.code != 2 || !strings.Contains(r.stderr, "came with Docker Engine 28.0; this engine is Docker Engine "+facts.Versions[result.EnvDocker]) || strings.Contains(r.stderr, "campaign ") {
			t.Errorf("on %s: exit %d, want 2 before anything starts, naming the engine's version:\n%s", facts.Versions[result.EnvDocker], r.code, r.stderr)
		}
		t.Logf("engine %s: refused as it should be: %v", facts.Versions[result.EnvDocker], why)
		return
	}
	db, id := runStored(t, src)
	c := storedCampaign(t, db, id)
	subnetsSeen := map[string]string{}
	for _, mode := range []string{"", ".routed", ".nat-unprotected"} {
		sub := c.Env["docker.network"+mode+"_subnet"]
		if c.Env["docker.network"+mode] == "" || sub == "" {
			t.Errorf("the campaign did not record its %q network: %v", mode, c.Env)
		}
		if other, dup := subnetsSeen[sub]; dup {
			t.Errorf("networks %q and %q share subnet %s", other, mode, sub)
		}
		subnetsSeen[sub] = mode
	}
	network := map[int]string{}
	for _, cell := range storedCells(t, db, id) {
		network[cell.ID] = cell.Factors["server.network"]
	}
	for _, tr := range okTrials(t, db, id, 3, func(tr result.Trial) string { return network[tr.CellID] }) {
		t.Logf("%s: %.4g transactions/s, the server saw %s", network[tr.CellID], trialMeasures(tr)["transactions_per_sec"], tr.Seen["server.net.interfaces"])
	}
}
