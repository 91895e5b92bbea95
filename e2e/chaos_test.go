package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

// The fault-injection suite (`make chaos`; its quick cases run in `make
// test` too). Each case starts a real campaign, injects one fault, and
// records a row of the table docs/reliability.md keeps: what ctrbench
// did, how many trials were lost or duplicated, what was left behind,
// the exit status and the message a user read.

type chaosRow struct {
	Fault, Did  string
	Lost, Dup   int
	Left        string
	Exit        string
	Message     string
	Order       int
	failed      bool
	testName    string
	elapsedSecs float64
}

var (
	chaosMu   sync.Mutex
	chaosRows []chaosRow
)

// chaosCase marks a test as a fault-injection case: slow ones run only
// under `make chaos` (CTRBENCH_CHAOS=1).
func chaosCase(t *testing.T, slow bool) {
	t.Helper()
	requireDocker(t)
	if slow && os.Getenv("CTRBENCH_CHAOS") == "" {
		t.Skip("a slow fault-injection case: make chaos runs it")
	}
}

// record adds the case's row; a case that failed its checks says so in
// the table.
func record(t *testing.T, start time.Time, r chaosRow) {
	t.Helper()
	r.testName, r.elapsedSecs = t.Name(), time.Since(start).Seconds()
	t.Cleanup(func() {
		r.failed = t.Failed()
		chaosMu.Lock()
		chaosRows = append(chaosRows, r)
		chaosMu.Unlock()
	})
}

func TestMain(m *testing.M) {
	startAddressMonitor()
	code := m.Run()
	stopAddressMonitor()
	if len(chaosRows) > 0 {
		table := chaosTable()
		fmt.Print("\n" + table)
		if doc := os.Getenv("CTRBENCH_CHAOS_DOC"); doc != "" {
			if err := replaceTable(doc, table); err != nil {
				fmt.Fprintln(os.Stderr, "chaos:", err)
				code = 1
			}
		}
	}
	os.Exit(code)
}

func chaosTable() string {
	rows := append([]chaosRow(nil), chaosRows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Order < rows[j].Order })
	var b strings.Builder
	b.WriteString("| fault | what ctrbench did | trials lost | trials duplicated | left behind | exit status | message | case |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }
	for _, r := range rows {
		verdict := fmt.Sprintf("`%s` (%.0f s)", r.testName, r.elapsedSecs)
		if r.failed {
			verdict += " **FAILED its checks**"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s |\n", cell(r.Fault), cell(r.Did), r.Lost, r.Dup, cell(r.Left), cell(r.Exit), cell(r.Message), verdict)
	}
	return b.String()
}

// replaceTable puts table between the chaos markers of the document
// (CTRBENCH_CHAOS_TABLE names another table's).
func replaceTable(path, table string) error {
	name := "chaos table"
	if n := os.Getenv("CTRBENCH_CHAOS_TABLE"); n != "" {
		name = n // a second table of the document (make chaos's Kubernetes faults)
	}
	begin, end := "<!-- "+name+": begin (make chaos writes it) -->\n", "<!-- "+name+": end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no chaos table markers", path)
	}
	stamp := fmt.Sprintf("Run %s on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), hostLine())
	return os.WriteFile(path, []byte(s[:i+len(begin)]+stamp+table+s[j:]), 0o644)
}

func hostLine() string {
	out, _ := exec.Command("uname", "-sr").Output()
	return strings.TrimSpace(string(out))
}

// bgRun is a ctrbench run in the background, killable.
type bgRun struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	code   int
}

// startRun starts ctrbench with args in its own process group.
func startRun(t *testing.T, args ...string) *bgRun {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), args...)
	s := &bgRun{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		s.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			s.code = ee.ExitCode()
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
			return
		default:
		}
		// A case that stopped early: the run it kills must not leave its
		// campaign behind for the next case.
		s.kill()
		s.wait(t, 2*time.Minute)
		if m := campaignLine.FindStringSubmatch(s.stderr.String()); m != nil {
			_ = exec.Command(testutil.Binary(t), "clean", "--campaign", m[1]).Run()
		}
	})
	return s
}

func (s *bgRun) kill() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) }

// wait waits for the run to end and returns its exit code.
func (s *bgRun) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(d):
		s.kill()
		<-s.done
		t.Fatalf("ctrbench did not end within %s:\n%s", d, s.stderr.String())
		return -1
	}
}

// waitFor waits until the run's stderr matches re (or it ends).
func (s *bgRun) waitFor(t *testing.T, re string, d time.Duration) bool {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if rx.MatchString(s.stderr.String()) {
			return true
		}
		select {
		case <-s.done:
			return rx.MatchString(s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// ledger is what a campaign's results file holds, checked: SQLite's
// integrity check passes, and no trial (a cell's repetition) is there
// twice; lost counts the planned trials missing.
type ledger struct {
	trials    []result.Trial
	lost, dup int
	integrity error
}

func readLedger(t *testing.T, db, id string, planned int) ledger {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger{integrity: s.Check(ctx)}
	if l.trials, err = s.Trials(ctx, id); err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int]int{}
	for _, tr := range l.trials {
		if tr.Warmup {
			continue
		}
		seen[[2]int{tr.CellID, tr.Repetition}]++
	}
	for _, n := range seen {
		if n > 1 {
			l.dup += n - 1
		}
	}
	l.lost = planned - len(seen)
	return l
}

// leftWord is the table's "left behind" for a campaign: "nothing", or
// what remains.
func leftWord(t *testing.T, ids ...string) string {
	var left []string
	for _, id := range ids {
		left = append(left, leftovers(t, id)...)
	}
	if len(left) == 0 {
		return "nothing"
	}
	t.Errorf("left behind: %v", left)
	return strings.Join(left, "; ")
}

// lastLine is the last line of a run's stderr that starts "ctrbench:",
// the message a user reads at the end.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "ctrbench: ") {
			return strings.TrimPrefix(lines[i], "ctrbench: ")
		}
	}
	return lines[len(lines)-1]
}

// quickCells is a campaign of many short trials as host processes.
func quickCells(name string, reps int) string { return primesCells(name, reps, "50ms") }

// primesCells is a campaign of reps trials of cpu.primes for dur each, as
// host processes.
func primesCells(name string, reps int, dur string) string {
	return fmt.Sprintf(`name: %s
seed: 1
repetitions: %d
warmup: 0
timeout: 30s
factors:
  platform: [native]
workloads:
  - {name: p, type: cpu.primes, params: {duration: %s, max_prime: "2000"}}
`, name, reps, dur)
}

// ctrbench killed (SIGKILL, the whole process group) at random moments,
// over and over, while trials are being recorded; each time the campaign
// is resumed without `clean`. The results file is never corrupt, every
// trial is there exactly once and whole, nothing is left behind.
func TestChaosKilledWhileWriting(t *testing.T) {
	chaosCase(t, false)
	start := time.Now()
	const reps, kills = 60, 8
	exp := writeExperiment(t, quickCells("chaos-kill", reps))
	db := filepath.Join(t.TempDir(), "r.db")
	first := startRun(t, "run", exp, "--db", db, "--no-report")
	if !first.waitFor(t, `campaign \S+: \d+ cells`, time.Minute) {
		t.Fatalf("no campaign started:\n%s", first.stderr)
	}
	id := campaignLine.FindStringSubmatch(first.stderr.String())[1]
	run := first
	landed := 0
	for i := range kills {
		// Somewhere in the middle of a trial or of its recording.
		run.waitFor(t, `\[\d+/\d+\]`, 20*time.Second)
		time.Sleep(time.Duration(50+(i*137)%400) * time.Millisecond)
		run.kill()
		if run.wait(t, time.Minute) != 0 {
			landed++ // it was still running
		}
		run = startRun(t, "run", "--db", db, "--resume", id, "--no-report")
	}
	if landed < kills/2 {
		t.Errorf("only %d of %d kills landed on a running campaign", landed, kills)
	}
	code := run.wait(t, 3*time.Minute)
	l := readLedger(t, db, id, reps)
	if code != 0 || l.integrity != nil || l.lost != 0 || l.dup != 0 {
		t.Errorf("exit %d, integrity %v, lost %d, duplicated %d\n%s", code, l.integrity, l.lost, l.dup, run.stderr)
	}
	// Whole: every trial has the observations every other has.
	for _, tr := range l.trials {
		if tr.Status != result.OK || len(tr.Observations) != len(l.trials[0].Observations) || len(tr.Observations) == 0 {
			t.Errorf("trial %d: %s, %d observations (trial 1 has %d)", tr.Seq, tr.Status, len(tr.Observations), len(l.trials[0].Observations))
		}
	}
	record(t, start, chaosRow{Order: 10, Fault: fmt.Sprintf("ctrbench killed (SIGKILL) %d times at random moments while trials run and are recorded (%d landed on a running campaign)", kills, landed),
		Did: "each `run --resume` removed what the killed run left and went on; SQLite's WAL keeps each trial one transaction", Lost: l.lost, Dup: l.dup,
		Left: leftWord(t, id), Exit: fmt.Sprintf("%d after the last resume", code), Message: fmt.Sprintf("integrity_check: %s", okOr(l.integrity))})
}

func okOr(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// Three campaigns at once on one machine: two share a results file, the
// third has its own; each runs containers on Docker's bridge and LXC
// containers on a bridge of ctrbench's, so bridges and subnets must be
// per campaign. All complete, nothing lost or duplicated.
func TestChaosCampaignsAtOnce(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	const reps = 3
	src := func(name string) string {
		return fmt.Sprintf(`name: %s
repetitions: %d
warmup: 0
timeout: 60s
factors:
  platform: [docker, lxc]
  network: [bridge]
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 200ms}}
`, name, reps)
	}
	dir := t.TempDir()
	shared, own := filepath.Join(dir, "shared.db"), filepath.Join(dir, "own.db")
	runs := []*bgRun{
		startRun(t, "run", writeExperiment(t, src("chaos-a")), "--db", shared, "--no-report"),
		startRun(t, "run", writeExperiment(t, src("chaos-b")), "--db", shared, "--no-report"),
		startRun(t, "run", writeExperiment(t, src("chaos-c")), "--db", own, "--no-report"),
	}
	dbs := []string{shared, shared, own}
	ids, codes, lost, dup := awaitAll(t, runs, dbs, 2*reps)
	// Each campaign's LXC bridge, as its environment record says.
	var seen []string
	distinct := map[string]bool{}
	for i, id := range ids {
		sub := storedCampaign(t, dbs[i], id).Env["lxc.bridge_subnet"]
		seen = append(seen, sub)
		distinct[sub] = true
	}
	if len(distinct) != len(ids) || distinct[""] {
		t.Errorf("the campaigns' LXC subnets: %v, want one each", seen)
	}
	record(t, start, chaosRow{Order: 20, Fault: "three campaigns at once: two on one results file, one on its own; Docker bridge and LXC bridge in each",
		Did:  "all three ran to the end side by side: SQLite's WAL and busy timeout serialise the writers; each campaign's LXC bridge took its own /24 (" + strings.Join(seen, ", ") + ")",
		Lost: lost, Dup: dup, Left: leftWord(t, ids...), Exit: strings.Join(codes, ", "), Message: "—"})
}

// awaitAll waits for campaigns run at once, each of planned trials into
// its results file, and checks each: it completed (exit 0), its file is
// intact, nothing lost or duplicated. It returns their IDs and exit
// statuses, and the trials lost and duplicated over all.
func awaitAll(t *testing.T, runs []*bgRun, dbs []string, planned int) (ids, codes []string, lost, dup int) {
	t.Helper()
	for i, r := range runs {
		code := r.wait(t, 5*time.Minute)
		m := campaignLine.FindStringSubmatch(r.stderr.String())
		if m == nil {
			t.Fatalf("run %d: no campaign:\n%s", i, r.stderr)
		}
		ids, codes = append(ids, m[1]), append(codes, fmt.Sprint(code))
		l := readLedger(t, dbs[i], m[1], planned)
		lost, dup = lost+l.lost, dup+l.dup
		if code != 0 || l.integrity != nil || l.lost != 0 || l.dup != 0 {
			t.Errorf("campaign %s: exit %d, integrity %v, lost %d, duplicated %d\n%s", m[1], code, l.integrity, l.lost, l.dup, r.stderr)
		}
	}
	return ids, codes, lost, dup
}

// The disk under the results file fills up mid-campaign (an ext4 of
// 8 MiB on a loop device, filled by another writer): the campaign stops at
// the trial it could not record with a message saying what to do, the
// file passes SQLite's integrity check and keeps every trial recorded
// before; once space is freed, resume completes it.
func TestChaosResultsDiskFull(t *testing.T) {
	chaosCase(t, false)
	start := time.Now()
	mnt, err := loopExt4Sized(t, 8<<20)
	if err != nil {
		t.Skipf("no loop device: %v", err)
	}
	const reps = 30
	exp := writeExperiment(t, quickCells("chaos-dbfull", reps))
	db := filepath.Join(mnt, "r.db")
	run := startRun(t, "run", exp, "--db", db, "--no-report")
	if !run.waitFor(t, `\[5/\d+\]`, time.Minute) {
		t.Fatalf("the campaign did not get going:\n%s", run.stderr)
	}
	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	code := run.wait(t, 2*time.Minute)
	msg := lastLine(run.stderr.String())
	id := campaignLine.FindStringSubmatch(run.stderr.String())[1]
	before := readLedger(t, db, id, reps)
	if code == 0 || !strings.Contains(msg, "could not record trial") || !strings.Contains(msg, "free space on the disk that holds it") || !strings.Contains(msg, "--resume "+id) {
		t.Errorf("exit %d: %s", code, msg)
	}
	if before.integrity != nil || len(before.trials) < 5 {
		t.Errorf("after the disk filled: integrity %v, %d trials kept", before.integrity, len(before.trials))
	}
	os.Remove(filler)
	again := startRun(t, "run", "--db", db, "--resume", id, "--no-report")
	rcode := again.wait(t, 2*time.Minute)
	after := readLedger(t, db, id, reps)
	if rcode != 0 || after.integrity != nil || after.lost != 0 || after.dup != 0 {
		t.Errorf("resume: exit %d, integrity %v, lost %d, duplicated %d\n%s", rcode, after.integrity, after.lost, after.dup, again.stderr)
	}
	record(t, start, chaosRow{Order: 30, Fault: "the disk under the results file full (8 MiB ext4 on a loop device, filled mid-campaign)",
		Did:  fmt.Sprintf("stopped at the trial it could not record; %d trials kept, integrity_check %s; resume after freeing space completed", len(before.trials), okOr(before.integrity)),
		Lost: after.lost, Dup: after.dup, Left: leftWord(t, id), Exit: fmt.Sprintf("%d, then %d after resume", code, rcode), Message: msg})
}

// Another process holds the results file's write lock for 60 s
// mid-campaign: a sqlite3 shell left in a transaction (BEGIN IMMEDIATE,
// COMMIT a minute later). ctrbench waits, says so and names the shell;
// the trials go on meanwhile, each held in memory, and once the lock is
// let go every trial is recorded, in order, none lost or twice; exit 0.
// Host processes only: the campaign needs no engine.
func TestChaosResultsLocked(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	const reps, hold = 40, 60 * time.Second
	exp := writeExperiment(t, primesCells("chaos-locked", reps, "1s"))
	db := filepath.Join(t.TempDir(), "r.db")
	run := startRun(t, "run", exp, "--db", db, "--no-report")
	if !run.waitFor(t, `\[5/\d+\]`, time.Minute) {
		t.Fatalf("the campaign did not get going:\n%s", run.stderr)
	}
	pid, release := testutil.SQLite3Lock(t, db)
	locked := time.Now()
	time.Sleep(hold)
	release()
	heldFor := time.Since(locked).Round(time.Second)
	code := run.wait(t, 5*time.Minute)
	stderr := run.stderr.String()
	id := campaignID(t, stderr)
	l := readLedger(t, db, id, reps)
	waitLine, overLine, during := "", "", 0
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(line, "waiting: the results file") && waitLine == "":
			waitLine = line
		case strings.HasPrefix(line, "waiting: over after"):
			overLine = line
		case waitLine != "" && overLine == "" && regexp.MustCompile(`^\[\d+/\d+\] ok`).MatchString(line):
			during++
		}
	}
	holder := fmt.Sprintf("is locked by another process (pid %d (sqlite3) holds its write lock)", pid)
	if code != 0 || l.lost != 0 || l.dup != 0 || l.integrity != nil || !strings.Contains(waitLine, holder) || overLine == "" || during == 0 {
		t.Errorf("exit %d, lost %d, duplicated %d, integrity %v, %d trials ended while it waited; want exit 0, nothing lost, the wait said naming pid %d (sqlite3):\n%s",
			code, l.lost, l.dup, l.integrity, during, pid, stderr)
	}
	for i, tr := range l.trials {
		if tr.Seq != i+1 {
			t.Errorf("trial %d recorded as the %d-th", tr.Seq, i+1)
		}
	}
	record(t, start, chaosRow{Order: 31, Fault: "the results file locked by another process for 60 s mid-campaign (a sqlite3 shell: BEGIN IMMEDIATE, COMMIT a minute later)",
		Did: fmt.Sprintf("waited, saying so and naming the shell; the trials went on meanwhile (%d ended while it waited), each held in memory; once the lock was let go, after %s, every one was recorded in order; %d trials, integrity_check %s",
			during, heldFor, len(l.trials), okOr(l.integrity)),
		Lost: l.lost, Dup: l.dup, Left: leftWord(t, id), Exit: fmt.Sprint(code), Message: clip(waitLine, 300) + " … " + overLine})
}

// fill writes to path until the disk is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	_ = f.Sync()
}

// The disk under a workload's data fills up: host processes whose
// temporary directory is a 32 MiB ext4 write a 64 MiB file. The trial
// fails saying so, the campaign goes on to the trials that fit.
func TestChaosDataDiskFull(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	mnt, err := loopExt4Sized(t, 32<<20)
	if err != nil {
		t.Skipf("no loop device: %v", err)
	}
	t.Setenv("TMPDIR", mnt)
	exp := writeExperiment(t, `name: chaos-datafull
seed: 1
repetitions: 2
warmup: 0
timeout: 60s
factors:
  platform: [native]
workloads:
  - {name: big, type: disk.fio, params: {size: 64MiB, runtime: 1s}}
  - {name: small, type: disk.fio, params: {size: 4MiB, runtime: 1s}}
`)
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 5*time.Minute, "run", exp, "--db", db, "--no-report")
	id := campaignID(t, r.stderr)
	l := readLedger(t, db, id, 4)
	names := cellWorkloads(t, db, id)
	var reason string
	for _, tr := range l.trials {
		switch names[tr.CellID] {
		case "big":
			if tr.Status != result.Failed || !strings.Contains(strings.ToLower(tr.Error), "no space left") {
				t.Errorf("trial %d (64 MiB on 32 MiB): %s %q", tr.Seq, tr.Status, tr.Error)
			}
			reason = tr.Error
		case "small":
			if tr.Status != result.OK {
				t.Errorf("trial %d (4 MiB): %s %q", tr.Seq, tr.Status, tr.Error)
			}
		}
	}
	if r.code != 3 || l.lost != 0 {
		t.Errorf("exit %d, lost %d:\n%s", r.code, l.lost, r.stderr)
	}
	if len(reason) > 160 {
		reason = reason[:160] + "…"
	}
	record(t, start, chaosRow{Order: 35, Fault: "the disk under a workload's data full (fio writing 64 MiB into a 32 MiB ext4)",
		Did: "the trial failed with the tool's reason; the campaign went on, and the trials that fit ran ok", Lost: l.lost, Dup: l.dup,
		Left: leftWord(t, id), Exit: fmt.Sprint(r.code) + " (trials failed)", Message: reason})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// execBoth is an experiment that runs the shell command cmd (busybox's
// sh) once in Docker and once as a host process, under the factor lines
// extra, reading n=<number> from its output.
func execBoth(name, extra, timeout, cmd string) string {
	return fmt.Sprintf(`name: %s
seed: 1
repetitions: 1
warmup: 0
timeout: %s
factors:
  platform: [docker, native]
%sworkloads:
  - name: w
    type: exec
    params:
      command: [busybox, sh, -c, '%s']
      format: regex
      metrics:
        n: {pattern: 'n=(?P<value>[0-9]+)', unit: n, better: higher}
`, name, timeout, extra, cmd)
}

// A workload that needs more memory than its limit: the kernel's OOM
// killer kills it; the trial fails saying so, and the campaign goes on.
func TestChaosOOMKilled(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	exp := writeExperiment(t, execBoth("chaos-oom", "  memory: [64MiB]\n", "60s", `x=$(busybox head -c 250000000 /dev/zero | busybox tr "\0" x); echo ${#x}; echo n=1`))
	db := filepath.Join(t.TempDir(), "r.db")
	r := ctrbench(t, 5*time.Minute, "run", exp, "--db", db, "--no-report")
	id := campaignID(t, r.stderr)
	l := readLedger(t, db, id, 2)
	cells := cellFactors(t, db, id)
	var msg string
	for _, tr := range l.trials {
		if tr.Status != result.Failed || !strings.Contains(tr.Error, "out of memory") {
			t.Errorf("%s: %s %q", cells[tr.CellID]["platform"], tr.Status, tr.Error)
		}
		msg = tr.Error
	}
	if r.code != 3 || l.lost != 0 {
		t.Errorf("exit %d, lost %d:\n%s", r.code, l.lost, r.stderr)
	}
	record(t, start, chaosRow{Order: 70, Fault: "a workload OOM-killed (250 MB held under a 64 MiB limit), in Docker and as a host process",
		Did: "the trial failed, saying the kernel's OOM killer killed it (read from the instance's cgroup); the campaign went on", Lost: l.lost, Dup: l.dup,
		Left: leftWord(t, id), Exit: fmt.Sprint(r.code) + " (trials failed)", Message: clip(msg, 200)})
}

// An emulated host's network namespace deleted from outside mid-trial:
// the trial under way keeps it (a namespace lives while processes are in
// it), and before the next trial ctrbench finds the lab broken and
// rebuilds it, so the campaign completes.
func TestChaosNetnsDeleted(t *testing.T) {
	chaosCase(t, false)
	start := time.Now()
	const reps = 3
	exp := writeExperiment(t, fmt.Sprintf(`name: chaos-netns
seed: 1
repetitions: %d
warmup: 0
timeout: 30s
factors:
  hosts: [2]
  platform: [native]
  network: [host]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 2s}}
`, reps))
	db := filepath.Join(t.TempDir(), "r.db")
	run := startRun(t, "run", exp, "--db", db, "--no-report")
	waitRunning(t, run, "agent run --workload net.tcp_stream")
	out, _ := exec.Command("ip", "netns", "list").Output()
	var victim string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "ctb") && strings.HasSuffix(f, "h2") {
			victim = f
		}
	}
	if victim == "" {
		t.Fatalf("no emulated host 2 among the namespaces: %s", out)
	}
	if o, err := exec.Command("ip", "netns", "delete", victim).CombinedOutput(); err != nil {
		t.Fatalf("ip netns delete %s: %v %s", victim, err, o)
	}
	code := run.wait(t, 3*time.Minute)
	id := campaignLine.FindStringSubmatch(run.stderr.String())[1]
	l := readLedger(t, db, id, reps)
	ok := 0
	for _, tr := range l.trials {
		if tr.Status == result.OK {
			ok++
		}
	}
	rebuilt := strings.Contains(run.stderr.String(), "rebuilding the lab")
	if code != 0 || ok != reps || !rebuilt || l.lost != 0 || l.dup != 0 {
		t.Errorf("exit %d, %d ok, rebuilt %v, lost %d, duplicated %d:\n%s", code, ok, rebuilt, l.lost, l.dup, run.stderr)
	}
	record(t, start, chaosRow{Order: 80, Fault: "an emulated host's network namespace deleted from outside (ip netns delete) mid-trial",
		Did:  fmt.Sprintf("the trial under way kept its namespace; before the next, ctrbench found the lab broken and rebuilt it; %d of %d trials ok", ok, reps),
		Lost: l.lost, Dup: l.dup, Left: leftWord(t, id), Exit: fmt.Sprint(code), Message: noteLine(run.stderr.String(), "rebuilding the lab")})
	assertNoLab(t)
}

// noteLine is the first line of out that contains s.
func noteLine(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// A workload that forks without end under a pids limit: the limit holds
// it (the machine's process table is untouched), the trial fails, the
// instance and every process it forked are gone, and the campaign goes
// on.
func TestChaosForkBomb(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	exp := writeExperiment(t, execBoth("chaos-forkbomb", "  pids: [64]\n", "8s", `while :; do busybox sleep 600 & done`))
	db := filepath.Join(t.TempDir(), "r.db")
	before := countProcs("sleep 600")
	r := ctrbench(t, 3*time.Minute, "run", exp, "--db", db, "--no-report")
	id := campaignID(t, r.stderr)
	l := readLedger(t, db, id, 2)
	cells := cellFactors(t, db, id)
	var what []string
	for _, tr := range l.trials {
		if tr.Status == result.OK {
			t.Errorf("%s: a fork bomb's trial ok", cells[tr.CellID]["platform"])
		}
		what = append(what, fmt.Sprintf("%s: %s, %s", cells[tr.CellID]["platform"], tr.Status, clip(tr.Error, 120)))
	}
	left := countProcs("sleep 600") - before
	if left > 0 {
		t.Errorf("%d of the bomb's processes outlived the campaign", left)
	}
	if r.code != 3 || l.lost != 0 {
		t.Errorf("exit %d, lost %d:\n%s", r.code, l.lost, r.stderr)
	}
	sort.Strings(what)
	record(t, start, chaosRow{Order: 71, Fault: "a workload that forks without end (a `while :; do sleep & done` loop) under `pids: 64`, in Docker and as a host process",
		Did:  "the pids limit held it (the loop's fork failed); the trial failed, and every process it forked was killed with it (its process group, then its cgroup); the campaign went on",
		Lost: l.lost, Dup: l.dup, Left: leftWord(t, id) + fmt.Sprintf(" (%d stray processes)", max(left, 0)), Exit: fmt.Sprint(r.code) + " (trials failed)", Message: clip(what[0], 200)})
}

// countProcs counts the machine's processes whose command line has s.
func countProcs(s string) int {
	out, _ := exec.Command("pgrep", "-f", "-c", s).Output()
	var n int
	fmt.Sscan(strings.TrimSpace(string(out)), &n)
	return n
}

// Two campaigns with emulated hosts at once: each lab's address plan
// (198.18.0.0/24 underlay, 198.18.<h>.0/24 bridges) lives inside that
// campaign's own namespaces, so the same plan twice does not collide;
// both complete.
func TestChaosLabsAtOnce(t *testing.T) {
	chaosCase(t, true)
	start := time.Now()
	src := `name: chaos-labs
seed: 1
repetitions: 2
warmup: 0
timeout: 30s
factors:
  hosts: [2]
  platform: [native, docker]
  network: [host, bridge]
exclude:
  - {platform: native, network: bridge}
  - {platform: docker, network: host}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 500ms}}
`
	dir := t.TempDir()
	dbs := []string{filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")}
	runs := []*bgRun{
		startRun(t, "run", writeExperiment(t, src), "--db", dbs[0], "--no-report"),
		startRun(t, "run", writeExperiment(t, src), "--db", dbs[1], "--no-report"),
	}
	ids, codes, lost, dup := awaitAll(t, runs, dbs, 4)
	record(t, start, chaosRow{Order: 21, Fault: "two campaigns with emulated hosts at once (the same address plan: a 198.18.0.0/24 underlay, routed 198.18.<h>.0/24 bridges)",
		Did:  "both ran to the end: each lab's addresses live in that campaign's own namespaces (named by its token), so the plans never meet",
		Lost: lost, Dup: dup, Left: leftWord(t, ids...), Exit: strings.Join(codes, ", "), Message: "—"})
	assertNoLab(t)
}
