// Package e2e runs the real ctrbench binary against the real Docker Engine,
// the way a user does: experiment file in, exit status and report out, and
// nothing left behind.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/platform/lxc"
	"github.com/ctrbench/ctrbench/internal/platform/native"
	"github.com/ctrbench/ctrbench/internal/platform/nested"
	"github.com/ctrbench/ctrbench/internal/platform/podman"
	"github.com/ctrbench/ctrbench/internal/platform/swarm"
	"github.com/ctrbench/ctrbench/internal/platform/vm"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

type run struct {
	stdout, stderr string
	code           int
}

func ctrbench(t *testing.T, timeout time.Duration, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running ctrbench %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("ctrbench %v did not finish within %s\nstderr:\n%s", args, timeout, r.stderr)
	}
	return r
}

// writeExperiment writes an experiment file into a temp dir.
func writeExperiment(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "exp.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// full reports whether the whole suite runs (make test-full:
// CTRBENCH_E2E_FULL=1), not make test's, which keeps of two tests of one
// code path the quicker.
func full() bool { return os.Getenv("CTRBENCH_E2E_FULL") != "" }

// fullOnly skips a test make test leaves to make test-full, saying which
// quicker test of make test runs its path.
func fullOnly(t *testing.T, coveredBy string) {
	t.Helper()
	if !full() {
		t.Skipf("make test-full runs it (CTRBENCH_E2E_FULL=1); make test runs its path in %s", coveredBy)
	}
}

func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs the Docker Engine")
	}
	testutil.RequireRoot(t)
	if err := engine.Available(context.Background()); err != nil {
		t.Skipf("no Docker Engine: %v", err)
	}
}

var campaignLine = regexp.MustCompile(`campaign (\S+): \d+ cells`)

func campaignID(t *testing.T, stderr string) string {
	t.Helper()
	m := campaignLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no campaign ID in output:\n%s", stderr)
	}
	return m[1]
}

// assertNothingLeft checks that no container, network or volume of the
// campaign, and no ctb* link, remains.
// It reports whether nothing was.
func assertNothingLeft(t *testing.T, campaign string) bool {
	t.Helper()
	left := leftovers(t, campaign)
	for _, l := range left {
		t.Errorf("left behind: %s", l)
	}
	return assertNoLab(t) && len(left) == 0
}

// leftovers lists what remains of the campaign: containers, networks and
// volumes, its links, cgroups, work directories and iptables rules.
func leftovers(t *testing.T, campaign string) []string {
	t.Helper()
	var left []string
	rep, err := engine.Leftovers(context.Background(), campaign)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Empty() {
		left = append(left, fmt.Sprintf("engine objects of campaign %s: %+v", campaign, rep))
	}
	ls, err := links.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l == engine.BridgeName(campaign) || strings.HasPrefix(l, lxc.BridgeName(campaign)) || strings.HasPrefix(l, vm.BridgeName(campaign)) {
			left = append(left, fmt.Sprintf("link %s of campaign %s", l, campaign))
		}
	}
	if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/ctrbench/" + campaign); len(dirs) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", dirs))
	}
	for _, root := range []string{nested.WorkRoot, podman.WorkRoot, lxc.WorkRoot, vm.WorkRoot, swarm.WorkRoot, native.WorkRoot} {
		if _, err := os.Stat(filepath.Join(root, campaign)); !os.IsNotExist(err) {
			left = append(left, fmt.Sprintf("the work directory of campaign %s in %s (%v)", campaign, root, err))
		}
	}
	if out, _ := exec.Command("iptables", "-w", "-S", "FORWARD").Output(); strings.Contains(string(out), lxc.BridgeName(campaign)) || strings.Contains(string(out), vm.BridgeName(campaign)) {
		left = append(left, fmt.Sprintf("iptables rules of campaign %s:\n%s", campaign, out))
	}
	return left
}

// assertNoLab checks that no network namespace, OVS bridge, WireGuard
// agent or route into the engines' part of the subnet pool (a campaign's
// Docker or podman network, a nested parent's inner bridge) of ctrbench's
// remains (tests run one at a time), so the test that leaves one fails
// rather than the next one that looks.
func assertNoLab(t *testing.T) bool {
	t.Helper()
	clean := true
	left := func(format string, args ...any) {
		t.Helper()
		clean = false
		t.Errorf(format, args...)
	}
	engines := subnets.Default().Net(subnets.EnginesFirst, 17).String()
	if out, _ := exec.Command("ip", "-4", "route", "show", "root", engines).Output(); len(strings.TrimSpace(string(out))) > 0 {
		links, _ := exec.Command("ip", "-br", "link", "show").Output()
		objs, err := engine.Leftovers(context.Background(), "")
		left("routes into the engines' networks (%s: a campaign's network, a nested parent's inner bridge) left behind:\n%s\nthe machine's links:\n%s\nctrbench's objects on the engine (every campaign): %+v %v", engines, out, links, objs, err)
	}
	ns, _ := filepath.Glob("/run/netns/ctb*")
	if len(ns) > 0 {
		left("network namespaces left behind: %v", ns)
	}
	var bridges []string
	if out, err := exec.Command("ovs-vsctl", "--timeout=2", "list-br").Output(); err == nil {
		for _, br := range strings.Fields(string(out)) {
			if strings.HasPrefix(br, "ctb") {
				left("OVS bridge %s left behind", br)
				bridges = append(bridges, br)
			}
		}
	}
	if pids := ownProcesses("agent wireguard"); len(pids) > 0 {
		left("WireGuard agents left running: %v", pids)
	}
	// Removed, so that only the test that left them fails: what this
	// machine's view holds (its namespaces, its Open vSwitch), never a
	// clean of everything, which would take what tests beside this one
	// (Docker 28's, in an emulated machine) are using.
	for _, n := range ns {
		_ = exec.Command("ip", "netns", "delete", filepath.Base(n)).Run()
	}
	for _, br := range bridges {
		_ = exec.Command("ovs-vsctl", "--timeout=10", "--if-exists", "del-br", br).Run()
	}
	return clean
}

// ownProcesses are the processes whose command line matches pattern
// (pgrep -f) in this test's mount namespace: make test runs the engine's
// tests again on Docker 28 in an emulated machine of its own beside the
// other packages, whose processes are not this test's to count.
func ownProcesses(pattern string) []string {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	out, _ := exec.Command("pgrep", "-f", pattern).Output()
	var own []string
	for _, pid := range strings.Fields(string(out)) {
		if ns, err := os.Readlink("/proc/" + pid + "/ns/mnt"); err == nil && ns == self {
			own = append(own, pid)
		}
	}
	return own
}

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// runReport runs an experiment that must succeed, checks it left nothing
// behind, and returns its JSON report decoded into rows of T, with the
// database path.
func runReport[T any](t *testing.T, src string) ([]T, string) {
	t.Helper()
	db, _ := runStored(t, src)
	return reportRows[T](t, db), db
}

// reportRows is the JSON report of the latest campaign of a results file,
// decoded into rows of T.
func reportRows[T any](t *testing.T, db string) []T {
	t.Helper()
	rep := ctrbench(t, time.Minute, "report", "--db", db, "--format", "json")
	var rows []T
	if err := json.Unmarshal([]byte(rep.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// runStored runs an experiment that must succeed, checks it left nothing
// behind, and returns its results file and campaign ID.
func runStored(t *testing.T, src string) (db, id string) {
	t.Helper()
	exp := writeExperiment(t, src)
	db = filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 10*time.Minute, "run", exp, "--db", db, "--no-report")
	id = campaignID(t, r.stderr)
	if !assertNothingLeft(t, id) {
		t.Logf("the run that left it:\n%s", r.stderr)
	}
	if r.code != 0 {
		f := ctrbench(t, time.Minute, "report", "--db", db, "--failures")
		t.Fatalf("run exited %d\n%s\n%s", r.code, r.stderr, f.stdout)
	}
	assertAddressesInPool(t, db, id)
	return db, id
}

// fromStore opens a results file, reads what read reads of campaign id
// (a method of the store: (*store.DB).Trials, …) and closes the file; an
// error fails the test.
func fromStore[T any](t *testing.T, db, id string, read func(*store.DB, context.Context, string) (T, error)) T {
	t.Helper()
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := read(s, context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// storedTrials reads a campaign's trials from its results file, as a
// resumed run finds them.
func storedTrials(t *testing.T, db, id string) []result.Trial {
	t.Helper()
	return fromStore(t, db, id, (*store.DB).Trials)
}

// storedCells are a stored campaign's cells.
func storedCells(t *testing.T, db, id string) []result.Cell {
	t.Helper()
	return fromStore(t, db, id, (*store.DB).Cells)
}

// storedCampaign reads a campaign's record (its environment, its design)
// from its results file.
func storedCampaign(t *testing.T, db, id string) result.Campaign {
	t.Helper()
	return fromStore(t, db, id, (*store.DB).Campaign)
}

// cellFactors maps each cell of a stored campaign to its factors.
func cellFactors(t *testing.T, db, id string) map[int]map[string]string {
	t.Helper()
	out := map[int]map[string]string{}
	for _, c := range storedCells(t, db, id) {
		out[c.ID] = c.Factors
	}
	return out
}

// cellWorkloads maps each cell of a stored campaign to its workload's name.
func cellWorkloads(t *testing.T, db, id string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, c := range storedCells(t, db, id) {
		out[c.ID] = c.Workload
	}
	return out
}

// trialMeasures are a trial's own measurements by metric name: what its
// workload reported, without qualifiers (no role, pair or telemetry).
func trialMeasures(tr result.Trial) map[string]float64 {
	m := map[string]float64{}
	for _, o := range tr.Observations {
		if o.Scope == result.ScopeTrial && o.Kind == result.KindMeasure && o.Role == "" {
			m[o.Metric] = o.Value
		}
	}
	return m
}

// okTrials are the stored campaign's trials that ended ok, in run order:
// every other one is a test error (okOf), and there must be want ok ones.
func okTrials(t *testing.T, db, id string, want int, what func(result.Trial) string) []result.Trial {
	t.Helper()
	ok := okOf(t, storedTrials(t, db, id), what)
	if len(ok) != want {
		t.Errorf("%d ok trials, want %d", len(ok), want)
	}
	return ok
}

// okOf are the trials of trials that ended ok, in their order: every other
// one is a test error with its status and error, named by its number and
// what(trial) (nil: by its number alone), so a test checks the numbers of
// the ok ones and a failed trial still fails it, saying why.
func okOf(t *testing.T, trials []result.Trial, what func(result.Trial) string) []result.Trial {
	t.Helper()
	var ok []result.Trial
	for _, tr := range trials {
		switch {
		case tr.Status == result.OK:
			ok = append(ok, tr)
		case what == nil:
			t.Errorf("trial %d: %s %s", tr.Seq, tr.Status, tr.Error)
		default:
			t.Errorf("trial %d (%s): %s %s", tr.Seq, what(tr), tr.Status, tr.Error)
		}
	}
	return ok
}
