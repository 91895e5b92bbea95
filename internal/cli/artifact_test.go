package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/artifact"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// artifactDB is beforeAfter's database with a calibration of the same
// experiment on the same host, which the reports of before and after use.
func artifactDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := beforeAfter(t)
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cal := result.Campaign{ID: "cal", Name: "bench", SpecPath: "bench.yaml", Kind: result.KindCalibration, Status: result.CampaignDone,
		Started: time.Unix(1e9+10, 0), Ended: time.Unix(1e9+20, 0), Baseline: map[string]string{"calibration": "a"},
		Env: map[string]string{result.EnvKernel: "6.1", result.EnvHostname: "h"}}
	if err := db.CreateCampaign(ctx, cal); err != nil {
		t.Fatal(err)
	}
	var cells []result.Cell
	for i, side := range []string{"a", "b"} {
		cells = append(cells, result.Cell{ID: i + 1, Workload: "tcp", WorkloadType: "net.tcp_stream",
			Factors: map[string]string{"platform": "native", "calibration": side}, Params: map[string]string{}})
	}
	if err := db.AddCells(ctx, "cal", cells); err != nil {
		t.Fatal(err)
	}
	for seq := 1; seq <= 20; seq++ {
		tr := result.Trial{CampaignID: "cal", CellID: 1 + seq%2, Seq: seq, Repetition: (seq + 1) / 2, Status: result.OK, Started: cal.Started, Ended: cal.Ended,
			Observations: []result.Observation{{Metric: "throughput", Value: 10 + 0.1*float64(seq%7), Unit: "Gbit/s", Better: result.Higher}}}
		if _, err := db.RecordTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// run is Main with its exit status and both outputs.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// unpacked is an archive read into memory: its top directory, its files
// in order, their bytes.
type unpacked struct {
	top   string
	names []string
	files map[string][]byte
}

func readArchive(t *testing.T, path string) unpacked {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	u := unpacked{files: map[string][]byte{}}
	tr := tar.NewReader(zr)
	for h, err := tr.Next(); err != io.EOF; h, err = tr.Next() {
		if err != nil {
			t.Fatal(err)
		}
		top, name, _ := strings.Cut(strings.TrimSuffix(h.Name, "/"), "/")
		u.top = top
		if name == "" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		u.names = append(u.names, name)
		u.files[name] = b
	}
	return u
}

// write packs u as it is (no manifest made) into a new archive.
func (u unpacked) write(t *testing.T, path string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range u.names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: u.top + "/" + n, Mode: 0o644, Size: int64(len(u.files[n]))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(u.files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An artifact made from one directory verifies from another, empty one
// with its own HOME — a fresh clone with no results database —, every
// check ok, and verify leaves that directory empty: it opened no
// database of its own. The archive holds the campaign and the calibration
// its report uses, not the other campaign of the database (whose history
// would change the report).
func TestArtifactVerifiesElsewhere(t *testing.T) {
	db := artifactDB(t)
	made := t.TempDir()
	t.Chdir(made)
	if code, out, errOut := run(t, "artifact", "aft", "--db", db); code != 0 {
		t.Fatalf("artifact: exit %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(made, "after.ctrbench.tar.gz") // the default name
	fresh := t.TempDir()
	t.Chdir(fresh)
	t.Setenv("HOME", fresh)
	code, out, errOut := run(t, "artifact", "verify", file)
	if code != 0 || errOut != "" {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("verify:\n%s", out)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "FAILED") {
			t.Errorf("failed check: %s", l)
		}
	}
	for _, want := range []string{"ok      report report.html: rendered again from results.db: identical", "ok      sha256 results.db", "all 10 checks ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify did not say %q", want)
		}
	}
	if left, _ := os.ReadDir(fresh); len(left) > 0 {
		t.Errorf("verify left %v in its working directory", left)
	}
	u := readArchive(t, file)
	if !strings.Contains(string(u.files[artifact.ReportName]), "<dd>cal (") || strings.Contains(string(u.files[artifact.ReportName]), "History of") {
		t.Error("the archived report does not name calibration cal, or has a history of campaigns the archive lacks")
	}
	checkArchivedDB(t, u)
}

// checkArchivedDB opens the archive's results.db: after and its
// calibration, nothing else.
func checkArchivedDB(t *testing.T, u unpacked) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	if err := os.WriteFile(path, u.files[artifact.DBName], 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cs, err := db.Campaigns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, " ") != "cal after" {
		t.Errorf("the archived database holds %v, want cal and after", ids)
	}
	if ts, _ := db.Trials(ctx, "after"); len(ts) != 16 {
		t.Errorf("%d trials of after archived, want 16", len(ts))
	}
}

// The archive lists and checks with the real tools: GNU tar lists its
// files, sha256sum -c passes in the extracted directory. Its files are
// what the design says; made twice, every file but the ones that say when
// it was made (ctrbench.json, README.txt, and so SHA256SUMS) is the same.
func TestArtifactWithRealTools(t *testing.T) {
	db := artifactDB(t)
	dir, again := t.TempDir(), filepath.Join(t.TempDir(), "a.tar.gz")
	file := filepath.Join(dir, "a.tar.gz")
	for _, f := range []string{file, again} {
		if code, out, errOut := run(t, "artifact", "after", "--db", db, "-o", f); code != 0 {
			t.Fatalf("artifact: exit %d\n%s%s", code, out, errOut)
		}
	}
	a, b := readArchive(t, file), readArchive(t, again)
	want := "README.txt SHA256SUMS commands.txt ctrbench.json environment.json experiment.yaml report.html results.db"
	if got := strings.Join(a.names, " "); got != want || a.top != "after" {
		t.Errorf("archive holds %s/ %s, want after/ %s", a.top, got, want)
	}
	for _, n := range []string{artifact.DBName, artifact.ReportName, artifact.ExperimentName, artifact.EnvName, artifact.CommandsName} {
		if !bytes.Equal(a.files[n], b.files[n]) {
			t.Errorf("%s differs between two artifacts of the same campaign", n)
		}
	}
	checkManifests(t, a)
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	ls, err := exec.Command("tar", "-tzf", file).CombinedOutput()
	if err != nil || !strings.Contains(string(ls), "after/SHA256SUMS\n") || !strings.Contains(string(ls), "after/results.db\n") {
		t.Errorf("tar -tzf: %v\n%s", err, ls)
	}
	if out, err := exec.Command("tar", "-xzf", file, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
	cmd.Dir = filepath.Join(dir, "after")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), ": OK\n") != 7 {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
}

// checkManifests reads ctrbench.json, environment.json and commands.txt.
func checkManifests(t *testing.T, u unpacked) {
	t.Helper()
	var b artifact.Build
	if err := json.Unmarshal(u.files[artifact.BuildName], &b); err != nil {
		t.Fatal(err)
	}
	if b.Version != sysinfo.Version || b.Campaign == nil || b.Campaign.Status != "done" || b.Campaign.Calibration != "cal" || b.Made == "" {
		t.Errorf("ctrbench.json: %s", u.files[artifact.BuildName])
	}
	if got := string(u.files[artifact.EnvName]); got != "{\n  \"hostname\": \"h\",\n  \"kernel\": \"6.1\"\n}\n" {
		t.Errorf("environment.json: %s", got)
	}
	cmds := string(u.files[artifact.CommandsName])
	for _, want := range []string{"ctrbench run bench.yaml --set seed=0\n", "ctrbench artifact verify a.tar.gz\n", "ctrbench report --db results.db --campaign after --html report.html\n"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("commands.txt lacks %q:\n%s", want, cmds)
		}
	}
}

// tamper makes an artifact, lets change alter it, verifies it and
// returns verify's exit status and output.
func tamper(t *testing.T, change func(t *testing.T, u *unpacked)) (int, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "a.tar.gz")
	if code, out, errOut := run(t, "artifact", "after", "--db", artifactDB(t), "-o", file); code != 0 {
		t.Fatalf("artifact: exit %d\n%s%s", code, out, errOut)
	}
	u := readArchive(t, file)
	change(t, &u)
	u.write(t, file)
	code, out, _ := run(t, "artifact", "verify", file)
	return code, out
}

func wantFailed(t *testing.T, code int, out string, lines ...string) {
	t.Helper()
	if code != ExitError {
		t.Errorf("verify of a tampered artifact: exit %d, want %d", code, ExitError)
	}
	for _, l := range lines {
		if !strings.Contains(out, "\nFAILED  "+l) {
			t.Errorf("verify did not fail %q:\n%s", l, out)
		}
	}
}

// One byte of the report changed: its sum fails, and so does the
// comparison with the report rendered again.
func TestArtifactTamperedReport(t *testing.T) {
	code, out := tamper(t, func(t *testing.T, u *unpacked) {
		r := u.files[artifact.ReportName]
		i := bytes.Index(r, []byte("<dd>done</dd>"))
		if i < 0 {
			t.Fatal("no status in the report")
		}
		r[i+4] = 'D'
	})
	wantFailed(t, code, out, "sha256 report.html: SHA256SUMS lists", "report report.html: differs from the report rendered again from results.db: line")
}

// The database changed and its sum with it: every sum passes, but the
// report rendered from the database is not the archived one.
func TestArtifactTamperedDatabase(t *testing.T) {
	code, out := tamper(t, func(t *testing.T, u *unpacked) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "results.db")
		if err := os.WriteFile(path, u.files[artifact.DBName], 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.SetCampaignEnv(ctx, "after", map[string]string{result.EnvKernel: "6.2"}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u.files[artifact.DBName] = b
		sums := map[string]string{}
		for n, f := range u.files {
			if n != artifact.SumsName {
				h := sha256.Sum256(f)
				sums[n] = hex.EncodeToString(h[:])
			}
		}
		u.files[artifact.SumsName] = artifact.Manifest(sums)
	})
	wantFailed(t, code, out, "report report.html: differs from the report rendered again from results.db: line")
	if strings.Contains(out, "FAILED  sha256") || !strings.Contains(out, "1 of 10 checks FAILED") {
		t.Errorf("a sum failed, or more than the report:\n%s", out)
	}
	if !strings.Contains(out, `<th>kernel</th><td>6.1</td>`) || !strings.Contains(out, `<th>kernel</th><td>6.2</td>`) {
		t.Errorf("the report's difference is not shown:\n%s", out)
	}
}

// A file added, or one taken away, fails.
func TestArtifactExtraAndMissingFile(t *testing.T) {
	code, out := tamper(t, func(_ *testing.T, u *unpacked) {
		u.names = append(u.names, "extra.txt")
		u.files["extra.txt"] = []byte("hello\n")
	})
	wantFailed(t, code, out, "unlisted extra.txt: in the archive but not in SHA256SUMS")
	code, out = tamper(t, func(_ *testing.T, u *unpacked) {
		u.names = strings.Fields(strings.Replace(strings.Join(u.names, " "), artifact.CommandsName, "", 1))
	})
	wantFailed(t, code, out, "sha256 commands.txt: listed in SHA256SUMS but missing from the archive")
	code, out = tamper(t, func(_ *testing.T, u *unpacked) {
		u.names = strings.Fields(strings.Replace(strings.Join(u.names, " "), artifact.DBName, "", 1))
	})
	wantFailed(t, code, out, "sha256 results.db", "report report.html: cannot render the report again: results.db is missing")
}

// A running campaign is refused; one whose ctrbench is gone is packed as
// interrupted, said so.
func TestArtifactStatus(t *testing.T) {
	ctx := context.Background()
	path := beforeAfter(t)
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for id, owner := range map[string]string{"live": sysinfo.Owner(), "gone": "999999999 1"} {
		c := result.Campaign{ID: id, Name: "bench", SpecPath: "bench.yaml", Status: result.CampaignRunning, Owner: owner, Started: time.Unix(2e9, 0)}
		if err := db.CreateCampaign(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	dir := t.TempDir()
	code, _, errOut := run(t, "artifact", "live", "--db", path, "-o", filepath.Join(dir, "live.tgz"))
	if code != ExitError || !strings.Contains(errOut, "still running") {
		t.Errorf("artifact of a running campaign: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "live.tgz")); err == nil {
		t.Error("an archive of a running campaign was written")
	}
	file := filepath.Join(dir, "gone.tgz")
	if code, out, errOut := run(t, "artifact", "gone", "--db", path, "-o", file); code != 0 || !strings.Contains(out, "(interrupted)") {
		t.Fatalf("artifact of an interrupted campaign: exit %d\n%s%s", code, out, errOut)
	}
	u := readArchive(t, file)
	if !strings.Contains(string(u.files[artifact.BuildName]), `"status": "interrupted"`) || !strings.Contains(string(u.files[artifact.ReadmeName]), "status       interrupted") {
		t.Errorf("the manifest does not say interrupted:\n%s\n%s", u.files[artifact.BuildName], u.files[artifact.ReadmeName])
	}
	if code, out, errOut := run(t, "artifact", "verify", file); code != 0 {
		t.Errorf("verify of an interrupted campaign's artifact: exit %d\n%s%s", code, out, errOut)
	}
}

// Usage: what was asked for is wrong (2); an archive that is not one
// fails its check (1).
func TestArtifactUsage(t *testing.T) {
	db := artifactDB(t)
	notArchive := filepath.Join(t.TempDir(), "x.tar.gz")
	os.WriteFile(notArchive, []byte("not gzip"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"artifact"}, ExitInvalidInput, "one campaign"},
		{[]string{"artifact", "verify"}, ExitInvalidInput, "one archive"},
		{[]string{"artifact", "verify", "/nonexistent.tar.gz"}, ExitInvalidInput, "no such file"},
		{[]string{"artifact", "nope", "--db", db}, ExitInvalidInput, "not found"},
		{[]string{"artifact", "after", "--db", db, "--bogus"}, ExitInvalidInput, "unknown flag"},
		{[]string{"artifact", "verify", notArchive}, ExitError, "does not verify"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, want %d saying %q: %s", c.args, code, c.code, c.says, errOut)
		}
	}
}
