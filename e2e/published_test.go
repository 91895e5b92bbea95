package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/store"
)

// Issue 29: S3's network path through a published port. A host process
// drives a server in a Docker container three ways: across the campaign's
// bridge to the container's own address (no NAT), through the port Docker
// published on the bridge's address (the kernel's DNAT rules Docker
// wrote), and through the port it published on loopback (Docker's
// userland proxy, docker-proxy, copying every byte). Every trial is ok,
// the port was published where the level says, and the proxy's CPU time
// says which path carried the bytes: seconds of it through loopback,
// none through the bridge's address (the proxy listens there too, but
// the kernel's rules reach the container first). The cost of each path
// against the bridge is logged; nothing about its size is asserted.
// podman publishes too (rootful, through CNI's portmap plugin: the
// kernel's DNAT, no userland proxy, so no published-proxy): its port is
// on its own bridge's address and no docker-proxy carries a byte.
func TestPublishedPorts(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[row](t, `name: e2e-published
seed: 29
repetitions: 2
warmup: 0
timeout: 1m
factors:
  platform: [docker, podman]
  server.network: [bridge, published, published-proxy]
  client.platform: [native]
exclude:
  - {platform: podman, server.network: published-proxy}
baseline: {server.network: bridge}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
`)
	for _, r := range rows {
		if r.Metric == "throughput" {
			vs := "baseline"
			if r.VsBaselinePct != nil {
				vs = strconv.FormatFloat(*r.VsBaselinePct, 'f', 1, 64) + "% vs bridge"
			}
			t.Logf("%s %s on %s %s: %.4g %s (%s)", r.Workload, r.Cell["server.network"], r.Cell["platform"], r.Metric, r.Mean, r.Unit, vs)
		}
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.Campaigns(context.Background())
	s.Close()
	if err != nil || len(cs) != 1 {
		t.Fatalf("campaigns %v: %v", cs, err)
	}
	network, platformOf := map[int]string{}, map[int]string{}
	for _, c := range storedCells(t, db, cs[0].ID) {
		network[c.ID], platformOf[c.ID] = c.Factors["server.network"], c.Factors["platform"]
	}
	for _, tr := range storedTrials(t, db, cs[0].ID) {
		if tr.Warmup {
			continue
		}
		n := network[tr.CellID] + " on " + platformOf[tr.CellID]
		if tr.Status != "ok" {
			t.Errorf("trial %d (%s): %s %s", tr.Seq, n, tr.Status, tr.Error)
			continue
		}
		addr := tr.Seen["server.platform."+docker.SeenPublished]
		cpu, _ := strconv.ParseFloat(tr.Seen["server.platform."+docker.SeenProxyCPU], 64)
		switch network[tr.CellID] {
		case "bridge":
			if addr != "" {
				t.Errorf("trial %d (bridge): a port was published (%s)", tr.Seq, addr)
			}
		case "published":
			if addr == "" || strings.HasPrefix(addr, "127.") {
				t.Errorf("trial %d (published): published at %q, want the bridge's address", tr.Seq, addr)
			}
			if cpu > 0.05 {
				t.Errorf("trial %d (published): the userland proxy took %.2f s of CPU: the bytes went through it, not the kernel's NAT", tr.Seq, cpu)
			}
		case "published-proxy":
			if !strings.HasPrefix(addr, "127.0.0.1:") {
				t.Errorf("trial %d (published-proxy): published at %q, want loopback", tr.Seq, addr)
			}
			if cpu < 0.05 {
				t.Errorf("trial %d (published-proxy): the userland proxy took %.2f s of CPU (%q): the bytes did not go through it", tr.Seq, cpu, tr.Seen["server.platform."+docker.SeenProxy])
			}
		}
		t.Logf("trial %d %s: published %q, proxy %q, proxy CPU %.2f s", tr.Seq, n, addr, tr.Seen["server.platform."+docker.SeenProxy], cpu)
	}
}
