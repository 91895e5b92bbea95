// Package archtest enforces the codebase's dependency rules: data flows one
// way, one package talks to the Docker Engine API (engine), one to a
// Kubernetes API server (kube), one to cobra.
package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
	_ "github.com/ctrbench/ctrbench/internal/platform/drivers"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

const mod = "github.com/ctrbench/ctrbench/"

// imports maps each package of the module to its direct imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	return goList(t, `{{.ImportPath}} {{join .Imports " "}}`)
}

// importsWithTests is imports with its tests' imports too.
func importsWithTests(t *testing.T) map[string][]string {
	t.Helper()
	return goList(t, `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`)
}

// goList maps each package of the module to the fields after its path in
// go list's lines of format.
func goList(t *testing.T, format string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", format, "./...")
	cmd.Dir = testutil.ModuleRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[strings.TrimPrefix(f[0], mod)] = f[1:]
	}
	return m
}

func TestOnlyOnePackageImports(t *testing.T) {
	// The Engine API is spoken by engine, the gateway every driver on a
	// Docker-compatible engine goes through (its fake, enginetest, speaks
	// the SDK's types too, and only tests import it). Links are made by
	// the packages whose job is the network: links (cleanup), netns,
	// netlab (topologies), wireguard (its TUN) and vminit (a virtual
	// machine's init, inside the machine).
	rules := map[string][]string{
		"github.com/docker/docker": {"internal/engine", "internal/engine/enginetest"},
		// The Kubernetes API (client-go and its types) is spoken by kube
		// alone, as the Docker Engine API is by engine.
		"k8s.io/":                        {"internal/kube"},
		"github.com/spf13/cobra":         {"internal/cli"},
		"github.com/vishvananda/netlink": {"internal/links", "internal/netns", "internal/netlab", "internal/wireguard", "internal/vminit"},
		"github.com/vishvananda/netns":   {"internal/netns"},
		"golang.zx2c4.com/wireguard":     {"internal/wireguard"},
		"modernc.org/sqlite":             {"internal/store"},
		"github.com/chromedp/":           {"internal/browser"},
		// Users' image archives are read by one package.
		"github.com/google/go-containerregistry": {"internal/userimage"},
		mod + "internal/engine/enginetest":       {}, // tests only
		// The engine's world is entered by the platforms built on an
		// engine and by who hands an engine over (the orchestrator's
		// Setup.Save, clean, the commands, a machine's init, benchmarks);
		// a platform that unpacks users' images gets them from Setup.Save.
		mod + "internal/engine": {"internal/engine", "internal/engine/enginetest", "internal/platform/docker", "internal/platform/podman", "internal/platform/nested",
			"internal/platform/swarm", "internal/orchestrator", "internal/cleanup", "internal/cli", "internal/vminit", "bench"},
	}
	for pkg, imps := range imports(t) {
		for _, imp := range imps {
			for prefix, owners := range rules {
				if strings.HasPrefix(imp, prefix) && !slices.Contains(owners, pkg) {
					t.Errorf("%s imports %s; only %s may", pkg, imp, strings.Join(owners, ", "))
				}
			}
		}
	}
}

// Packages that compute never import packages that act. The platform
// package itself only declares (interfaces, the driver registry,
// capabilities); its subpackages, the drivers, act.
func TestComputeDoesNotImportAct(t *testing.T) {
	compute := []string{"internal/stats", "internal/analysis", "internal/report", "internal/spec", "internal/result", "internal/workload",
		"internal/plan", "internal/schedule", "internal/vocab", "internal/invocation", "internal/platform", "internal/hdr",
		"internal/figure", "internal/htmlreport", "internal/advice", "internal/physics", "internal/outputs"}
	act := []string{"internal/orchestrator", "internal/runner", "internal/campaign", "internal/store", "internal/platform/",
		"internal/cli", "internal/agent", "internal/links", "internal/cgroup", "internal/netlab", "internal/delayline", "internal/netns", "internal/nestedparent", "internal/workdir", "internal/engine", "internal/kube"}
	all := imports(t)
	for _, c := range compute {
		for _, imp := range all[c] {
			for _, a := range act {
				if strings.HasPrefix(strings.TrimPrefix(imp, mod), a) {
					t.Errorf("%s (computes) imports %s (acts)", c, imp)
				}
			}
		}
	}
}

// The browser (headless Chromium, for tests of the HTML report) is not
// part of the binary: no package of it imports internal/browser.
func TestBinaryHasNoBrowser(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/ctrbench")
	cmd.Dir = testutil.ModuleRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod+"internal/browser" || strings.HasPrefix(dep, "github.com/chromedp/") {
			t.Errorf("the binary depends on %s", dep)
		}
	}
}

// Nothing but the command imports the CLI.
func TestNobodyImportsCLI(t *testing.T) {
	for pkg, imps := range imports(t) {
		for _, imp := range imps {
			if imp == mod+"internal/cli" && pkg != "cmd/ctrbench" {
				t.Errorf("%s imports the CLI", pkg)
			}
		}
	}
}

// The rest of the code asks a platform's driver what it can do; it never
// compares platform names. Every registered platform's name is spelled in
// a comparison only in its own driver's package (and tests). A driver's
// package is where its Open function lives. (A Docker network's scope
// "swarm" is the engine's word, not the platform's.)
func TestNobodyComparesPlatformNames(t *testing.T) {
	ds := platform.Drivers()
	if len(ds) < 2 {
		t.Fatalf("%d drivers registered: the test must see them all", len(ds))
	}
	for _, d := range ds {
		fn := runtime.FuncForPC(reflect.ValueOf(d.Open).Pointer()).Name()
		pkg, _, _ := strings.Cut(strings.TrimPrefix(fn, mod), ".")
		if !strings.HasPrefix(pkg, "internal/platform/") {
			t.Errorf("driver %s: its Open is %s, outside internal/platform/", d.Name, fn)
			continue
		}
		name := regexp.QuoteMeta(d.Name)
		cmd := exec.Command("git", "grep", "-n", "-E", `(==|!=) *"`+name+`"|case ("[^"]*", *)*"`+name+`"`, "--", "*.go", ":!*_test.go", ":!"+pkg+"/*")
		cmd.Dir = testutil.ModuleRoot()
		out, _ := cmd.Output() // git grep exits 1 when nothing matches
		var bad []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" && !strings.Contains(line, "Scope ==") {
				bad = append(bad, line)
			}
		}
		if len(bad) > 0 {
			t.Errorf("platform %s's name compared outside its driver %s (ask platform.Lookup(name).Caps instead):\n%s", d.Name, pkg, strings.Join(bad, "\n"))
		}
	}
}

// spec is the parser of experiment files, not the dictionary: the factor
// vocabulary is vocab's, and only what turns a file into a plan (or reads
// one back to run it: artifact's command lines) imports spec — in tests
// too. A campaign records its adaptive rule (result.Campaign.Adaptive);
// cli reads it from the stored text for campaigns older than that column.
func TestSpecIsOnlyTheParser(t *testing.T) {
	allowed := []string{"internal/cli", "internal/plan", "internal/campaign", "internal/orchestrator", "bench",
		"internal/platform/platformtest", "internal/artifact"}
	for pkg, imps := range importsWithTests(t) {
		if pkg == "internal/spec" || slices.Contains(allowed, pkg) {
			continue
		}
		if slices.Contains(imps, mod+"internal/spec") {
			t.Errorf("%s imports internal/spec (the experiment-file parser); the factor vocabulary is in internal/vocab, only %s parse", pkg, strings.Join(allowed, ", "))
		}
	}
}

// floors reads the package map of docs/architecture.md (the code block
// whose lines start with "floor", "ground" or "tests"): each package's
// floor, 0 at the top; a line that starts with no floor continues the one
// above. The tests' packages get floor -1.
func floors(t *testing.T) map[string]int {
	t.Helper()
	doc := architectureDoc(t)
	pkgRE := regexp.MustCompile(`^(internal/[a-z0-9/]+|cmd/[a-z]+|examples/[a-z]+|bench|e2e)$`)
	out, floor, inMap := map[string]int{}, -1, false
	for _, line := range strings.Split(string(doc), "\n") {
		fields := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, " floor 1 "):
			inMap = true
		case !inMap:
			continue
		case strings.HasPrefix(line, "```"):
			return out
		}
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "floor", "ground":
			floor++
		case "tests":
			floor = -1
		}
		for _, f := range fields {
			if pkgRE.MatchString(f) {
				if _, dup := out[f]; dup {
					t.Errorf("docs/architecture.md: %s is on two floors", f)
				}
				out[f] = floor
			}
		}
	}
	t.Fatal("docs/architecture.md: no package map (a code block starting \" floor 1 \")")
	return nil
}

// The package map of docs/architecture.md is true: it names every
// package and only packages that exist, and imports only go down it (the
// tests' packages aside, which nothing in the binary imports).
func TestArchitectureMapIsTrue(t *testing.T) {
	fl := floors(t)
	all := imports(t)
	for pkg := range all {
		if _, ok := fl[pkg]; !ok {
			t.Errorf("package %s is not on docs/architecture.md's map", pkg)
		}
	}
	for pkg := range fl {
		if _, ok := all[pkg]; !ok {
			t.Errorf("docs/architecture.md names %s, which is not a package", pkg)
		}
	}
	for pkg, imps := range all {
		for _, imp := range imps {
			dep, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			from, to := fl[pkg], fl[dep]
			switch {
			case to == -1 && from != -1:
				t.Errorf("%s imports %s, a package for tests only", pkg, dep)
			case from != -1 && to <= from:
				t.Errorf("%s (floor %d) imports %s (floor %d): imports only go down the map", pkg, from+1, dep, to+1)
			}
		}
	}
}

// Every package of the module under internal/ has its row in the table of
// docs/architecture.md's "The pieces": a newcomer finds each one's job.
func TestArchitectureNamesEveryPiece(t *testing.T) {
	doc := architectureDoc(t)
	named := map[string]bool{}
	nameRE := regexp.MustCompile("`([a-z0-9/]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		if first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | "); ok && strings.HasPrefix(line, "| `") {
			for _, m := range nameRE.FindAllStringSubmatch(first, -1) {
				named[m[1]] = true
			}
		}
	}
	for pkg := range imports(t) {
		if name, ok := strings.CutPrefix(pkg, "internal/"); ok && !named[name] {
			t.Errorf("internal/%s has no row in docs/architecture.md's table of pieces", name)
		}
	}
}

// architectureDoc is docs/architecture.md.
func architectureDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// "antagonist" is the old word for a neighbour: it stays only where old
// files and stored campaigns are read (docs/architecture.md, Words).
func TestOneWordForNeighbour(t *testing.T) {
	allowed := []string{"internal/vocab/factors.go", "internal/result/metric.go", "internal/spec/parse.go",
		"internal/store/cells.go", "internal/store/schema.go", "internal/store/metricnames.go"}
	cmd := exec.Command("git", "grep", "-l", "-i", "antagonist", "--", "*.go", "*.yaml", ":!*_test.go", ":!*/testdata/*")
	cmd.Dir = testutil.ModuleRoot()
	out, _ := cmd.Output() // git grep exits 1 when nothing matches
	for _, f := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, f) {
			t.Errorf("%s says antagonist: the concept's word is neighbour (the old word is read only in %s)", f, strings.Join(allowed, ", "))
		}
	}
}

// A cluster platform is asked about through platform.ClusterOf alone:
// outside internal/platform no code reads Capabilities.Cluster, so a new
// cluster platform (the toy one in platformtest, Kubernetes) changes
// nothing in spec, plan or runner.
func TestOneClusterQuestion(t *testing.T) {
	cmd := exec.Command("git", "grep", "-n", "-E", `Caps\.Cluster\b`, "--", "*.go", ":!*_test.go", ":!internal/platform/*")
	cmd.Dir = testutil.ModuleRoot()
	out, _ := cmd.Output() // git grep exits 1 when nothing matches
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("Capabilities.Cluster read outside internal/platform (ask platform.ClusterOf):\n%s", s)
	}
}

// The recipes of docs/architecture.md name files that exist: every path
// it quotes (`internal/…`, `e2e/…`, `docs/…`, `scripts/…`) without a
// placeholder (<name>) is in the tree.
func TestRecipesNameRealFiles(t *testing.T) {
	doc := string(architectureDoc(t))
	root := testutil.ModuleRoot()
	seen := 0
	for _, m := range regexp.MustCompile("`((?:internal|e2e|docs|scripts|cmd)/[^`<>* ]+\\.(?:go|md|sh))`").FindAllStringSubmatch(doc, -1) {
		seen++
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("docs/architecture.md names %s: %v", m[1], err)
		}
	}
	if seen < 5 {
		t.Errorf("docs/architecture.md quotes %d file paths: the pattern no longer finds them", seen)
	}
}
