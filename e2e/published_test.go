package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/result"
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
	measured := slices.DeleteFunc(storedTrials(t, db, cs[0].ID), func(tr result.Trial) bool { return tr.Warmup })
	where := func(tr result.Trial) string { return network[tr.CellID] + " on " + platformOf[tr.CellID] }
	for _, tr := range okOf(t, measured, where) {
		n := where(tr)
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

// TestPublishedMorePorts: servers that listen on more than the port
// ctrbench's agent is given, published all the same. A UDP stream's
// datagrams go to its UDP socket, on the agent's port number, published
// apart (15201/udp); redis (a real server, in a Docker container from the
// agent image with redis-server in it) on its own port 6379, driven by
// redis-benchmark on the machine through where Docker published 6379/tcp.
// Every trial ok, each extra port published where the level says, and
// the userland proxies' CPU says which path carried the UDP stream: the
// proxy's for the loopback level, none for the bridge's address.
func TestPublishedMorePorts(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-published-more
seed: 30
repetitions: 1
warmup: 0
timeout: 1m
factors:
  platform: [docker]
  server.network: [published, published-proxy]
  client.platform: [native]
workloads:
  - {name: udp, type: net.udp_stream, params: {duration: 1s, bitrate: 200M}}
  - name: redis
    type: service
    params:
      command: [redis-server, --port, "6379", --save, "", --appendonly, "no", --protected-mode, "no"]
      port: 6379
      client:
        type: exec
        params:
          command: [redis-benchmark, -h, "{server.host}", -p, "{server.port}", -n, "5000", -c, "4", -t, ping, -q, --csv]
          format: csv
          metrics: {ping_rps: {select: "PING_INLINE,rps", unit: req/s, better: higher}}
`)
	cells := cellFactors(t, db, id)
	works := cellWorkloads(t, db, id)
	for _, tr := range okTrials(t, db, id, 4, func(tr result.Trial) string { return works[tr.CellID] + ", " + cells[tr.CellID]["server.network"] }) {
		w, network := works[tr.CellID], cells[tr.CellID]["server.network"]
		ports := tr.Seen["server.platform."+docker.SeenPublishedPorts]
		cpu, _ := strconv.ParseFloat(tr.Seen["server.platform."+docker.SeenProxyCPU], 64)
		m := trialMeasures(tr)
		t.Logf("trial %d %s %s: ports %q, proxy CPU %.2f s, %v", tr.Seq, w, network, ports, cpu, m)
		more := map[string]string{"udp": "15201/udp=", "redis": "6379/tcp="}[w]
		if !strings.Contains(ports, more) {
			t.Errorf("trial %d (%s, %s): published %q, want %s…", tr.Seq, w, network, ports, more)
		}
		if network == "published-proxy" && !strings.Contains(ports, more+"127.0.0.1:") {
			t.Errorf("trial %d (%s): %q, want %s on loopback", tr.Seq, w, ports, more)
		}
		switch w {
		case "udp":
			if m["received_mbps"] <= 0 {
				t.Errorf("trial %d (udp, %s): received %v Mbit/s", tr.Seq, network, m["received_mbps"])
			}
			if network == "published" && cpu > 0.05 {
				t.Errorf("trial %d (udp, published): the userland proxies took %.2f s of CPU: the datagrams went through them, not the kernel's NAT", tr.Seq, cpu)
			}
			if network == "published-proxy" && cpu < 0.05 {
				t.Errorf("trial %d (udp, published-proxy): the userland proxies took %.2f s of CPU: the datagrams did not go through them", tr.Seq, cpu)
			}
		case "redis":
			if m["ping_rps"] <= 0 {
				t.Errorf("trial %d (redis, %s): %v", tr.Seq, network, m)
			}
		}
	}
}

// TestPublishedBetweenHosts: S3's network path, two Docker containers on
// two hosts through NAT. The server's container is on emulated host 2's
// NAT bridge, its ports published on host 2's address; the client is a
// container on host 1's NAT bridge (masqueraded as it leaves) or a process
// on host 1. Every trial ok, the server on its host's private subnet, a
// TCP stream bounded by the 200 Mbit/s underlay it crosses (a tbf bound,
// not a statistic), and a UDP stream received through its own published
// port.
func TestPublishedBetweenHosts(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-published-hosts
seed: 31
repetitions: 1
warmup: 0
factors:
  hosts: [2]
  underlay: [200mbit]
  platform: [docker]
  server.network: [published]
  client:
    container: {client.platform: docker, client.network: published}
    process: {client.platform: native}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
  - {name: udp, type: net.udp_stream, params: {duration: 1s, bitrate: 50M}}
`)
	cells, works := cellFactors(t, db, id), cellWorkloads(t, db, id)
	whatOf := func(tr result.Trial) string { return works[tr.CellID] + " from a " + cells[tr.CellID]["client"] }
	for _, tr := range okTrials(t, db, id, 4, whatOf) {
		what := whatOf(tr)
		if ifs := tr.Seen["server.net.interfaces"]; !strings.Contains(ifs, " 198.18.152.") {
			t.Errorf("trial %d (%s): the server saw %q, want host 2's NAT bridge (198.18.152.0/24)", tr.Seq, what, ifs)
		}
		m := trialMeasures(tr)
		switch works[tr.CellID] {
		case "tcp":
			if v := m["throughput"]; v <= 0 || v > 0.23 {
				t.Errorf("trial %d (%s): %.3f Gbit/s across a 200 Mbit/s underlay", tr.Seq, what, v)
			}
		case "udp":
			if m["received_mbps"] <= 0 {
				t.Errorf("trial %d (%s): %v", tr.Seq, what, m)
			}
		}
	}
}
