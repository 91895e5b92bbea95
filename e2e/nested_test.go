package e2e

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform/nested"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/runner"
	"github.com/ctrbench/ctrbench/internal/subnets"
)

// TestNestedParentLimit: two busy one-thread children in one parent
// limited to half a core share that half — the parent's limit bounds its
// children — while an unlimited parent's children use more than it. The
// limit is read back from the parent's cgroups on the host, and the
// children's CPU time from their own cgroups.
//
// The bounds are physical: the limited parent's children can use at most
// half a core over the span of their windows, plus a tenth of a CPU-second
// (the quota is enforced per 100 ms period, from per-CPU slices that can
// run past a period's end); the unlimited parent's, two threads, use more
// than that on any machine that has a core to give them — 1.7-1.8 cores
// measured on a quiet machine, 1.1-1.2 with other processes keeping a core
// busy, 0.50 with both cores busy (then the log says NOT SHOWN). No
// measured effect is asserted: chance failure nil.
func TestNestedParentLimit(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-nested-limit
seed: 2
repetitions: 1
factors:
  platform: [nested]
  instances: [2]
  children: [2]
  parent.cpus: [none, "0.5"]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 2s, max_prime: 3000}}
`)
	trials := storedTrials(t, db, id)
	if len(trials) != 2 {
		t.Fatalf("%d trials, want 2", len(trials))
	}
	cores, most := map[string]float64{}, map[string]float64{} // parent.cpus level -> the children's CPU seconds per second of their span; the most the limit allows
	for _, tr := range trials {
		limited := tr.Seen["platform.parent.cgroup.cpus"]
		if parent := tr.Seen["platform.parent"]; parent == "" {
			t.Fatalf("trial %d: the parent is not recorded: %v", tr.Seq, tr.Seen)
		}
		var secs float64
		for _, o := range tr.Observations {
			if o.Metric == "cpu_seconds" && o.Scope == "instance" {
				secs += o.Value
			}
		}
		start, err1 := time.Parse(time.RFC3339Nano, tr.Seen[runner.SeenRunStarted])
		end, err2 := time.Parse(time.RFC3339Nano, tr.Seen[runner.SeenRunEnded])
		if err1 != nil || err2 != nil {
			t.Fatalf("trial %d: the children's span: %v %v", tr.Seq, err1, err2)
		}
		span := end.Sub(start).Seconds()
		level := "none"
		if limited != "" {
			level = limited
		}
		cores[level] = secs / span
		most[level] = (0.5*span + 0.1) / span
		t.Logf("parent cpus %s: the two children used %.2f cores over %.2f s", level, secs/span, span)
	}
	got, ok := cores["0.5"]
	if !ok {
		t.Fatalf("no trial's parent reads back a limit of 0.5 cores: %v", cores)
	}
	if got > most["0.5"] {
		t.Errorf("in a parent limited to half a core the children used %.2f cores, more than the %.2f the limit allows", got, most["0.5"])
	}
	if got <= 0 {
		t.Errorf("in a parent limited to half a core the children used %.2f cores", got)
	}
	// Whether the unlimited parent's children get more than the limit is
	// the machine's doing: with both cores taken by other work (make test
	// runs Docker 28's tests beside the other packages) they got 0.50. The
	// bound above is the promise; this contrast is shown when the machine
	// had the CPU to show it, and said when not.
	if free := cores["none"]; free <= most["0.5"] {
		t.Logf("NOT SHOWN: in an unlimited parent the two children used %.2f cores, no more than the half-core limit allows (%.2f): the machine had no spare core during the trial", free, most["0.5"])
	}
}

// TestNestedCleanAfterSIGKILL: a run killed in the middle of a nested
// trial leaves its parent (its children inside it), the campaign's
// network and the parents' work directory; `ctrbench clean` removes all of
// it, and no route to an inner bridge remains.
func TestNestedCleanAfterSIGKILL(t *testing.T) {
	requireDocker(t)
	db := filepath.Join(t.TempDir(), "r.db")
	exp := writeExperiment(t, `name: e2e-nested-kill
seed: 1
repetitions: 1
timeout: 1h
factors:
  platform: [nested]
  network: [bridge]
  children: [2]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1h}}
`)
	cmd, stderr := startCtrbench(t, "run", exp, "--db", db)
	waitFor(t, "the campaign to start", time.Minute, func() bool { return campaignLine.MatchString(stderr.String()) })
	id := campaignID(t, stderr.String())
	work := filepath.Join(nested.WorkRoot, id)
	waitFor(t, "the client child running", 2*time.Minute, func() bool {
		// This campaign's route, through its own bridge.
		out, _ := exec.Command("ip", "-4", "route", "show", "root", innerBridges.String(), "dev", engine.BridgeName(id)).Output()
		rep, err := engine.Leftovers(context.Background(), id)
		return err == nil && len(rep.Containers) > 0 && len(strings.TrimSpace(string(out))) > 0
	})
	time.Sleep(2 * time.Second) // the server and client are up in the parent
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	before, err := engine.Leftovers(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Containers) == 0 {
		t.Fatalf("expected the killed run's parent to remain, found %+v", before)
	}
	if _, err := os.Stat(work); err != nil {
		t.Fatalf("expected the killed run's work directory to remain: %v", err)
	}
	r := ctrbench(t, time.Minute, "clean", "--campaign", id)
	if r.code != 0 {
		t.Fatalf("clean exited %d: %s%s", r.code, r.stdout, r.stderr)
	}
	contains(t, "clean output", r.stdout, "removed directory "+work)
	assertNothingLeft(t, id) // also: no route into an inner bridge remains
	if pids := ownProcesses("agent parent"); len(pids) > 0 {
		t.Errorf("parent engines left running: %v", pids)
	}
}

// TestNestedWiredByLab: the lab wires a nested parent's namespace, which
// its child shares — on Open vSwitch on the machine (S1's OVS parents) and
// on the routed bridge between two emulated hosts whose underlay is shaped
// (S1's remote hosts, Table V) — and the server child sees the address the
// lab gave its parent. With parent.network ovs (S1 Table III's OVS parent
// with a bridged child) the child is on its parent engine's bridge
// (the pool's inner bridges, 198.19.224.0/19) and the machine reaches it, or it the machine, only
// through the parent's wired address on OVS: a server child and a client
// child both work.
func TestNestedWiredByLab(t *testing.T) {
	requireDocker(t)
	db, id := runStored(t, `name: e2e-nested-lab
seed: 4
repetitions: 1
factors:
  topology:
    ovs: {hosts: 1, network: ovs, server.platform: nested, client.platform: native}
    two-hosts: {hosts: 2, network: bridge, underlay: 200mbit, server.platform: nested, client.platform: native}
    ovs-parent: {hosts: 1, network: bridge, parent.network: ovs, server.platform: nested, client.platform: native}
    ovs-parent-client: {hosts: 1, network: bridge, parent.network: ovs, server.platform: native, client.platform: nested}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
`)
	cells := cellFactors(t, db, id)
	for _, tr := range okTrials(t, db, id, 4, func(tr result.Trial) string { return cells[tr.CellID]["topology"] }) {
		topo := cells[tr.CellID]["topology"]
		nested := "server."
		if topo == "ovs-parent-client" {
			nested = ""
		}
		if tr.Seen[nested+"platform.parent"] == "" {
			t.Errorf("trial %d (%s): the nested child's parent is not recorded: %v", tr.Seq, topo, tr.Seen)
		}
		var tput float64
		for _, o := range tr.Observations {
			if id := o.ID(); id.Metric == "throughput" && id.Scope == result.ScopeTrial && id.Kind == result.KindMeasure && id.Role == "" {
				tput = o.Value
			}
		}
		ifs := tr.Seen[nested+"net.interfaces"]
		want := map[string]string{"ovs": "198.18.200.0/24", "two-hosts": "198.18.2.0/24", "ovs-parent": innerBridges.String(), "ovs-parent-client": innerBridges.String()}[topo]
		switch {
		case !hasAddrIn(ifs, netip.MustParsePrefix(want)):
			t.Errorf("trial %d (%s): the nested child saw %q, want an address in %s", tr.Seq, topo, ifs, want)
		case topo == "two-hosts" && (tput <= 0 || tput > 0.23):
			t.Errorf("across a 200 Mbit/s underlay: %.3f Gbit/s", tput)
		case tput <= 0:
			t.Errorf("trial %d (%s): throughput %v", tr.Seq, topo, tput)
		}
		if strings.HasPrefix(topo, "ovs-parent") && tr.Seen[nested+"platform.parent.network"] != "none" {
			t.Errorf("trial %d (%s): the parent's network %q, want none (wired by the lab)", tr.Seq, topo, tr.Seen[nested+"platform.parent.network"])
		}
	}
}

// TestNestedHostParentLeavesTheMachineAlone: a parent on the machine's own
// network runs its engine in the machine's namespace. It must not touch
// what is not ctrbench's: Docker's docker0 is still there afterwards (an
// engine started with no bridge deletes it — it once did here) and the
// machine's iptables rules are as they were; the client on the machine
// reaches the child on the parent's network.
func TestNestedHostParentLeavesTheMachineAlone(t *testing.T) {
	requireDocker(t)
	_, hadDocker0 := exec.Command("ip", "link", "show", "docker0").Output()
	rules := func() string {
		out, err := exec.Command("iptables-save").Output()
		if err != nil {
			t.Skipf("iptables-save: %v", err)
		}
		return withoutEmptyTables(counters.ReplaceAllString(string(out), ""))
	}
	before := rules()
	rows, _ := runReport[netRow](t, `name: e2e-nested-host-parent
seed: 6
repetitions: 1
factors:
  server.platform: [nested]
  client.platform: [native]
  parent.network: [host]
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 300ms}}
`)
	ok := false
	for _, r := range rows {
		ok = ok || r.Metric == "transactions_per_sec" && r.N == 1 && r.Mean > 0
	}
	if !ok {
		t.Errorf("no result: %+v", rows)
	}
	if _, err := exec.Command("ip", "link", "show", "docker0").Output(); hadDocker0 == nil && err != nil {
		t.Errorf("docker0 is gone after a nested parent ran on the machine's network")
	}
	if after := rules(); after != before {
		t.Errorf("the machine's iptables rules changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// withoutEmptyTables is iptables-save's text without its comments and
// without the tables that hold nothing: a table the kernel made in the
// namespace when something first looked at it (Docker 28 looks at raw) has
// only its built-in chains, each accepting, which is what no table does.
func withoutEmptyTables(save string) string {
	var keep, table []string
	empty := true
	for _, l := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "*"):
			table, empty = []string{l}, true
		case table != nil && l == "COMMIT":
			if !empty {
				keep = append(keep, append(table, l)...)
			}
			table = nil
		case table != nil:
			table = append(table, l)
			empty = empty && strings.HasPrefix(l, ":") && strings.HasSuffix(strings.TrimSpace(l), " ACCEPT")
		default:
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// counters are iptables-save's packet and byte counts.
var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// innerBridges is where the nested parents' inner bridges are, in the
// default subnet pool.
var innerBridges = subnets.Default().Net(subnets.InnerBridges, subnets.InnerBridgesBits)

// hasAddrIn reports whether interfaces, as an agent records them
// ("ctb0 198.19.224.2/26 mtu 1500; …"), has an address in p.
func hasAddrIn(interfaces string, p netip.Prefix) bool {
	for _, f := range strings.Fields(strings.ReplaceAll(interfaces, ";", " ")) {
		if a, err := netip.ParsePrefix(f); err == nil && p.Contains(a.Addr()) {
			return true
		}
	}
	return false
}

// An instantiated, empty table is no change; a policy or a rule is.
func TestWithoutEmptyTables(t *testing.T) {
	const filter = "*filter\n:INPUT ACCEPT \n:FORWARD DROP \nCOMMIT\n"
	if got := withoutEmptyTables("# by iptables-save\n" + filter + "*raw\n:PREROUTING ACCEPT \n:OUTPUT ACCEPT \nCOMMIT\n"); got != withoutEmptyTables(filter) {
		t.Errorf("an empty raw table counts:\n%q\n%q", got, withoutEmptyTables(filter))
	}
	for _, raw := range []string{"*raw\n:PREROUTING DROP \n:OUTPUT ACCEPT \nCOMMIT\n", "*raw\n:PREROUTING ACCEPT \n-A PREROUTING -d 198.18.0.2/32 -j DROP\nCOMMIT\n", "*raw\n:PREROUTING ACCEPT \n:CTB - \nCOMMIT\n"} {
		if withoutEmptyTables(filter+raw) == withoutEmptyTables(filter) {
			t.Errorf("a table with something in it is dropped: %q", raw)
		}
	}
}
