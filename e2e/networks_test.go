package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/hdr"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
	"github.com/ctrbench/ctrbench/internal/store"
)

type netRow struct {
	Campaign string            `json:"campaign"`
	Workload string            `json:"workload"`
	Metric   string            `json:"metric"`
	Cell     map[string]string `json:"cell"`
	N        int               `json:"n"`
	Flagged  int               `json:"flagged"`
	Mean     float64           `json:"mean"`
}

// TestEveryNetworkOnTheMachine: a request/response workload over every
// network mode of the machine itself, from a container and from a host
// process to a container; every trial ok, each agent saw the interface it
// should, and the campaign recorded the OVS datapath.
func TestEveryNetworkOnTheMachine(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[netRow](t, `name: e2e-networks
seed: 11
repetitions: 1
factors:
  server.platform: [docker]
  client.platform: [docker, native]
  network: [host, loopback, bridge, bridge-default, macvlan, ovs]
exclude:
  - {client.platform: native, network: loopback}
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 300ms}}
`)
	got := map[string]bool{}
	for _, r := range rows {
		if r.Metric == "transactions_per_sec" && r.N == 1 && r.Mean > 0 {
			got[r.Cell["client.platform"]+"/"+r.Cell["network"]] = true
		}
	}
	if len(got) != 11 {
		t.Errorf("want 11 cells with a result, got %d: %v", len(got), got)
	}
	d, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	camp, err := d.LatestCampaign(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if dp := camp.Env["net.ovs.datapath"]; dp != "netdev" && dp != "system" {
		t.Errorf("campaign env has no OVS datapath: %v", camp.Env)
	}
	trials, err := d.Trials(context.Background(), camp.ID)
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := d.Cells(context.Background(), camp.ID)
	netOf := map[int]string{}
	for _, c := range cells {
		netOf[c.ID] = c.Factors["network"] + "/" + c.Factors["client.platform"]
	}
	want := map[string]string{ // what the server saw on its interfaces
		"loopback/docker": "loopback only", "ovs/docker": "198.18.200.", "macvlan/docker": "198.18.201.", "macvlan/native": "198.18.201.",
	}
	for _, tr := range trials {
		if w, ok := want[netOf[tr.CellID]]; ok && !strings.Contains(tr.Seen["server.net.interfaces"], w) {
			t.Errorf("%s: the server saw %q, want %q", netOf[tr.CellID], tr.Seen["server.net.interfaces"], w)
		}
	}
}

// TestEmulatedHosts: processes and containers on two emulated hosts, over
// the routed bridge, the overlay, the encrypted overlay and Open vSwitch
// (a bridge per host, routed; S1 Exp 5's OVS across hosts), S2's ping-pong
// across three roles; the underlay's tbf rate caps a stream between hosts.
func TestEmulatedHosts(t *testing.T) {
	requireDocker(t)
	rows, _ := runReport[netRow](t, `name: e2e-hosts
seed: 12
repetitions: 1
factors:
  hosts: [2]
  layer:
    reference: {platform: native, network: host}
    docker: {platform: docker, network: bridge}
    overlay: {platform: docker, network: overlay}
    encrypted: {platform: docker, network: overlay-encrypted}
    ovs: {platform: docker, network: ovs}
  underlay: [none, 200mbit]
exclude:
  - {workload: pp, underlay: 200mbit}
workloads:
  - {name: pp, type: http.pingpong, params: {duration: 500ms, size: 10000}}
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
`)
	pp, tcp := map[string]float64{}, map[string]float64{}
	for _, r := range rows {
		switch {
		case r.Workload == "pp" && r.Metric == "transfer_rate":
			pp[r.Cell["layer"]] = r.Mean
		case r.Workload == "tcp" && r.Metric == "throughput":
			tcp[r.Cell["layer"]+"/"+r.Cell["underlay"]] = r.Mean
		}
	}
	for _, l := range []string{"reference", "docker", "overlay", "encrypted", "ovs"} {
		if pp[l] <= 0 {
			t.Errorf("ping-pong over %s: transfer rate %v", l, pp[l])
		}
		if v := tcp[l+"/200mbit"]; v <= 0 || v > 0.23 {
			t.Errorf("%s over a 200 Mbit/s underlay: %.3f Gbit/s", l, v)
		}
	}
	if v := tcp["docker/none"]; v < 0.5 {
		t.Errorf("unshaped bridge across hosts: %.3f Gbit/s, want well above the 0.2 shaped rate", v)
	}
}

// TestContainersOnEmulatedHostsNetwork: containers on network host with
// emulated hosts share their host's namespace — Docker's by joining a
// container of the campaign whose namespace the lab adopted as the host's,
// LXC's and podman's by the lab's path. A container and a host process on
// host 1 talk over loopback, which only one namespace has: faster than
// the 200 Mbit/s underlay allows. Two containers on hosts 1 and 2 talk
// across the shaped underlay: at most its rate. Bounds of a tbf shaper
// and of loopback, not a statistic: chance failure nil.
func TestContainersOnEmulatedHostsNetwork(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[netRow](t, `name: e2e-hostns
seed: 14
repetitions: 1
factors:
  hosts: [2]
  underlay: [200mbit]
  network: [host]
  layer:
    shared: {client.platform: native, server.platform: docker, client.host: 1, server.host: 1}
    shared-lxc: {client.platform: native, server.platform: lxc, client.host: 1, server.host: 1}
    shared-podman: {client.platform: podman, server.platform: native, client.host: 1, server.host: 1}
    across: {client.platform: docker, server.platform: docker}
    across-lxc-podman: {client.platform: lxc, server.platform: podman}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
`)
	got := map[string]float64{}
	for _, r := range rows {
		if r.Metric == "throughput" {
			got[r.Cell["layer"]] = r.Mean
		}
	}
	for _, l := range []string{"shared", "shared-lxc", "shared-podman"} {
		if v := got[l]; v < 0.5 {
			t.Errorf("%s: a container and a process in host 1's namespace, over loopback: %.3f Gbit/s, want well above the 0.2 Gbit/s underlay", l, v)
		}
	}
	for _, l := range []string{"across", "across-lxc-podman"} {
		if v := got[l]; v <= 0 || v > 0.23 {
			t.Errorf("%s: containers on hosts 1 and 2's networks, across a 200 Mbit/s underlay: %.3f Gbit/s", l, v)
		}
	}
	cells := cellFactors(t, db, rows[0].Campaign)
	okTrials(t, db, rows[0].Campaign, 5, func(tr result.Trial) string { return cells[tr.CellID]["layer"] })
}

// TestPairs: four client/server pairs at once; each pair's result is kept,
// the aggregate is their work over the span, and Jain's index is in (0, 1]
// — read from the stored trial, as the pairs measured it.
//
// Whether the four ran together is the machine's doing: with the
// machine's cores busy elsewhere, a client scheduled late shares little of
// a 1 s window with the others (80%, even 0%, was measured). What ctrbench
// promises (docs/networks.md), and the test checks, is that a trial whose
// pairs shared less than 90% of their window is flagged with the reason,
// and counted in the report as flagged and set apart from its statistics,
// and that one whose pairs shared more is neither. No measured effect is
// asserted: chance failure nil.
func TestPairs(t *testing.T) {
	requireDocker(t)
	rows, db := runReport[netRow](t, `name: e2e-pairs
seed: 13
repetitions: 1
factors:
  platform: [docker]
  network: [bridge]
  pairs: [4]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
`)
	trials := storedTrials(t, db, rows[0].Campaign)
	if len(trials) != 1 || trials[0].Status != result.OK {
		t.Fatalf("trials %+v, want one ok", trials)
	}
	tr := trials[0]
	var sum float64
	for p := 1; p <= 4; p++ {
		v, ok := observed(tr, fmt.Sprintf("pair%d.throughput", p))
		if !ok {
			t.Fatalf("no throughput of pair %d", p)
		}
		sum += v
	}
	agg, _ := observed(tr, "throughput")
	jain, _ := observed(tr, "pairs.jain")
	overlap := assertOverlapFlagged(t, tr, "pairs")
	t.Logf("the 4 pairs ran together for %.1f%% of their window", overlap)
	// The pairs' work over the span: their sum when they ran together,
	// less by the part of the span they did not share. Exactly: each pair's
	// window w_i holds the common part I = o·mean(w) and lies in the span
	// U <= Σw_i − 3I, so sum·o/(4−3o) <= aggregate <= sum.
	o := overlap / 100
	if agg > sum*(1+1e-9) || agg < sum*o/(4-3*o)*(1-1e-9) {
		t.Errorf("aggregate %.4f against the pairs' sum %.4f with %.0f%% overlap", agg, sum, overlap)
	}
	if jain <= 0.25 || jain > 1 {
		t.Errorf("Jain's index %v out of (1/4, 1]", jain)
	}
	assertReportFlagged(t, rows, "throughput", overlap < minCopiesOverlap)
}

// assertReportFlagged checks a one-trial campaign's report row of metric:
// a flagged trial is counted as flagged and set apart from the row's
// statistics (n 0), an unflagged one is counted in n.
func assertReportFlagged(t *testing.T, rows []netRow, metric string, flagged bool) {
	t.Helper()
	want := map[bool]int{true: 1, false: 0}[flagged]
	found := false
	for _, r := range rows {
		if r.Metric != metric {
			continue
		}
		found = true
		if r.Flagged != want || r.N != 1-want {
			t.Errorf("the report's row of %s: n %d, flagged %d; want n %d, flagged %d (the trial flagged: %v)", metric, r.N, r.Flagged, 1-want, want, flagged)
		}
	}
	if !found {
		t.Errorf("the report has no row of %s", metric)
	}
}

// TestFiftyPairs: S4's largest cell — 50 client/server pairs, 100
// containers on Docker's bridge — with small timed transfers: every pair
// ran, each pair's flows count in the merged FCT histogram, the trial
// records 100 hosting entities and its measured window, and the 100
// containers are removed.
//
// Whether the 50 ran together is not asserted: the go signal reaches every
// client at once, but each must then be scheduled, and with one of two
// cores kept busy by another process the last of 50 clients began 0.4 s
// and more after the first — 5% and more of an 8 s window, against the 10%
// that TestFiftyPairs once allowed; heavier load skews them further. What
// ctrbench promises (docs/networks.md) is that a trial whose pairs shared
// less than 90% of their window is flagged with the reason, and counted in
// the report as flagged and set apart from its statistics, and that one
// whose pairs shared more is neither: that is checked, and the share
// logged. No measured effect is asserted: chance failure nil.
func TestFiftyPairs(t *testing.T) {
	fullOnly(t, "TestPairs and TestPairsPercentiles (pairs begun together, aggregated), and make bench (50 and 100 pairs)")
	requireDocker(t)
	db, id := runStored(t, `name: e2e-fifty
seed: 13
repetitions: 1
timeout: 5m
factors:
  platform: [docker]
  network: [bridge]
  pairs: [50]
workloads:
  - {name: xfer, type: net.transfer, params: {size: 64KiB, duration: 8s}}
`)
	trials := storedTrials(t, db, id)
	if len(trials) != 1 || trials[0].Status != "ok" {
		t.Fatalf("trials %+v", trials)
	}
	tr := trials[0]
	obs := map[string]float64{}
	for _, o := range tr.Observations {
		obs[o.ID().String()] = o.Value
	}
	var flows float64
	for p := 1; p <= 50; p++ {
		v, ok := obs[fmt.Sprintf("pair%d.flows", p)]
		if !ok || v < 1 {
			t.Errorf("pair %d: %v flows (present %v)", p, v, ok)
		}
		flows += v
	}
	if obs["flows"] != flows {
		t.Errorf("flows %v, the pairs' sum %v", obs["flows"], flows)
	}
	ov := assertOverlapFlagged(t, tr, "pairs")
	t.Logf("the 50 pairs ran together for %.1f%% of their window", ov)
	rep := ctrbench(t, time.Minute, "report", "--db", db, "--campaign", id, "--format", "json")
	var rows []netRow
	if err := json.Unmarshal([]byte(rep.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	assertReportFlagged(t, rows, "flows", ov < minCopiesOverlap)
	if !(obs["fct_p50"] > 0 && obs["fct_p50"] <= obs["fct_p99"]) {
		t.Errorf("fct p50 %v, p99 %v", obs["fct_p50"], obs["fct_p99"])
	}
	hists := fromStore(t, db, id, (*store.DB).Histograms)
	var merged int64
	for _, h := range hists[tr.ID] {
		if h.Scope == result.ScopeAggregate && h.Role == "" && h.Metric == "fct" {
			d, err := hdr.Decode(h.Data)
			if err != nil {
				t.Fatal(err)
			}
			merged = d.TotalCount()
		}
	}
	if float64(merged) != flows {
		t.Errorf("the merged FCT histogram holds %d flows, the pairs completed %v", merged, flows)
	}
	if tr.Seen["placement.entities"] != "100" {
		t.Errorf("placement.entities %q, want 100", tr.Seen["placement.entities"])
	}
	start, err1 := time.Parse(time.RFC3339Nano, tr.Seen[runner.SeenRunStarted])
	end, err2 := time.Parse(time.RFC3339Nano, tr.Seen[runner.SeenRunEnded])
	if err1 != nil || err2 != nil || start.Before(tr.Started) || !end.After(start) || end.After(tr.Ended) {
		t.Errorf("measured window %v..%v (%v %v) not inside the trial %v..%v", start, end, err1, err2, tr.Started, tr.Ended)
	}
}

// TestCleanAfterKillWithLab: a run killed while its emulated hosts, overlay
// and WireGuard agents exist leaves them; `ctrbench clean` removes every
// namespace, link and agent.
func TestCleanAfterKillWithLab(t *testing.T) {
	requireDocker(t)
	db := filepath.Join(t.TempDir(), "r.db")
	exp := writeExperiment(t, `name: e2e-kill-lab
seed: 1
repetitions: 1
timeout: 1h
factors:
  hosts: [2]
  platform: [docker]
  network: [overlay-encrypted]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1h}}
`)
	cmd, stderr := startCtrbench(t, "run", exp, "--db", db)
	waitFor(t, "the campaign to start", time.Minute, func() bool { return campaignLine.MatchString(stderr.String()) })
	id := campaignID(t, stderr.String())
	// Killed once its lab and a trial are up: the hosts' namespaces
	// exist, a container runs (however long a busy machine takes).
	waitFor(t, "the lab and the trial to run", 3*time.Minute, func() bool {
		ns, _ := filepath.Glob("/run/netns/ctb*")
		rep, err := engine.Leftovers(context.Background(), id)
		return len(ns) > 0 && err == nil && len(rep.Containers) > 0
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	r := ctrbench(t, time.Minute, "clean", "--campaign", id)
	if r.code != 0 {
		t.Fatalf("clean exited %d: %s%s", r.code, r.stdout, r.stderr)
	}
	contains(t, "clean output", r.stdout, "removed netns ctb")
	assertNothingLeft(t, id)
}
