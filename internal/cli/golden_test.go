package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -update rewrites the golden files from what the code prints now. The
// goldens in testdata were written before the architecture changed; a
// refactoring must leave them byte for byte as they are.
var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/NAME, or writes it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first line where want and got part.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d\n want: %q\n  got: %q", i+1, w, g)
		}
	}
	return "(same lines, different bytes)"
}

// repoRelative writes the repository's absolute path (which the plan
// shows of the files an experiment reads) as $REPO, so the golden files
// hold wherever the repository is checked out.
func repoRelative(t *testing.T, out []byte) []byte {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(out, []byte(root+"/"), []byte("$REPO/"))
}

// runMain runs the command line as a user would and returns stdout with
// the exit status on a last line.
func runMain(t *testing.T, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	code := Main(context.Background(), args, &out, io.Discard)
	fmt.Fprintf(&out, "[exit %d]\n", code)
	return out.Bytes()
}

// Every experiment shipped, and the two stored campaigns' files, plan the
// same cells, baselines and trial order as before.
func TestDryRunGolden(t *testing.T) {
	files, err := filepath.Glob("../../experiments/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("experiments: %v %v", files, err)
	}
	more, _ := filepath.Glob("testdata/stored/*.yaml")
	files = append(files, more...)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			golden(t, "dryrun/"+name+".golden", repoRelative(t, runMain(t, "run", f, "--dry-run")))
		})
	}
	// --set reaches the plan: other factors, repetitions and seed.
	t.Run("quickstart-set", func(t *testing.T) {
		golden(t, "dryrun/quickstart-set.golden", runMain(t, "run", "../../experiments/quickstart.yaml", "--dry-run",
			"--set", "repetitions=2", "--set", "seed=9", "--set", "factors.platform=[docker]", "--set", "factors.network=[host, bridge, macvlan]"))
	})
	// A profile's overrides reach the plan, and --set wins over them.
	t.Run("quickstart-profile", func(t *testing.T) {
		golden(t, "dryrun/quickstart-profile.golden", runMain(t, "run", "../../experiments/quickstart.yaml", "--dry-run",
			"--profile", "quick", "--set", "repetitions=3"))
	})
}

// The reports of campaigns stored by an earlier schema (v3, written before
// the architecture changed) read the same, byte for byte, in every form;
// opening the file upgrades it in place.
func TestStoredReportsGolden(t *testing.T) {
	db := storedCopy(t)
	const (
		pairs = "golden-pairs-20261122-224432-85cf"
		coloc = "golden-coloc-20261122-224331-8012"
	)
	cases := []struct {
		name string
		args []string
	}{
		{"campaigns", []string{"campaigns"}},
		{"latest", []string{"report"}},
		{"pairs-baseline", []string{"report", "--campaign", pairs, "--baseline", "layer=native"}},
		{"pairs-baseline-json", []string{"report", "--campaign", pairs, "--baseline", "layer=native", "--format", "json"}},
	}
	for _, c := range []struct{ short, id string }{{"pairs", pairs}, {"coloc", coloc}} {
		for _, f := range []string{"table", "csv", "json"} {
			cases = append(cases, struct {
				name string
				args []string
			}{c.short + "-" + f, []string{"report", "--campaign", c.id, "--format", f}})
		}
		for _, flag := range []string{"telemetry", "per-pair", "matrix", "failures"} {
			cases = append(cases, struct {
				name string
				args []string
			}{c.short + "-" + strings.ReplaceAll(flag, "-", ""), []string{"report", "--campaign", c.id, "--" + flag}})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "stored/"+c.name+".golden", runMain(t, append(c.args, "--db", db)...))
		})
	}
}

// A campaign stored with histograms (schema 5: net.tcp_rr, net.udp_rr,
// http.get, net.transfer and http.wrk, one pair and two, on the native
// platform): the table says which percentiles it shows, and --pooled
// prints the percentiles of all requests of each cell's trials, read from
// the stored histograms, in every form.
func TestPooledReportsGolden(t *testing.T) {
	db := storedFile(t, "v5-hist.db")
	for name, args := range map[string][]string{
		"table":       {"report"},
		"pooled":      {"report", "--pooled"},
		"pooled-csv":  {"report", "--pooled", "--format", "csv"},
		"pooled-json": {"report", "--pooled", "--format", "json"},
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, "stored/hist-"+name+".golden", runMain(t, append(args, "--db", db)...))
		})
	}
}

// storedCopy is a copy of the v3 results file to read (opening it upgrades
// it in place).
func storedCopy(t *testing.T) string { return storedFile(t, "v3.db") }

// storedFile is a copy of a results file in testdata/stored.
func storedFile(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata/stored", name))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "results.db")
	if err := os.WriteFile(db, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return db
}
