// Package archtest enforces the codebase's dependency rules: data flows one
// way, one package talks to the Docker Engine API (engine), one to cobra.
package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

const mod = "github.com/ctrbench/ctrbench/"

// imports maps each package of the module to its direct imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
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
		"github.com/docker/docker":         {"internal/engine", "internal/engine/enginetest"},
		"github.com/spf13/cobra":           {"internal/cli"},
		"github.com/vishvananda/netlink":   {"internal/links", "internal/netns", "internal/netlab", "internal/wireguard", "internal/vminit"},
		"github.com/vishvananda/netns":     {"internal/netns"},
		"golang.zx2c4.com/wireguard":       {"internal/wireguard"},
		"modernc.org/sqlite":               {"internal/store"},
		"github.com/chromedp/":             {"internal/browser"},
		mod + "internal/engine/enginetest": {}, // tests only
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
		"internal/figure", "internal/htmlreport", "internal/placement", "internal/physics"}
	act := []string{"internal/orchestrator", "internal/runner", "internal/campaign", "internal/store", "internal/platform/",
		"internal/cli", "internal/agent", "internal/links", "internal/cgroup", "internal/netlab", "internal/netns", "internal/nestedparent", "internal/workdir", "internal/engine"}
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
// compares platform names. Only the drivers' own packages (and their
// tests) spell them.
func TestNobodyComparesPlatformNames(t *testing.T) {
	cmd := exec.Command("git", "grep", "-n", "-E", `(==|!=) *"(native|docker)"|case "(native|docker)"`, "--", "*.go", ":!*_test.go", ":!internal/platform/native/*", ":!internal/platform/docker/*")
	cmd.Dir = testutil.ModuleRoot()
	out, _ := cmd.Output() // git grep exits 1 when nothing matches
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("platform names compared outside their drivers (ask platform.Lookup(name).Caps instead):\n%s", s)
	}
}

// spec is the parser of experiment files, not the dictionary: the factor
// vocabulary is vocab's, and only what turns a file into a plan (or reads
// one back to run it) imports spec — in tests too. analysis reads one fact
// back from a stored campaign's file text (its adaptive repetition rule,
// spec.AdaptiveOf): the one exception, until campaigns record the rule.
func TestSpecIsOnlyTheParser(t *testing.T) {
	allowed := []string{"internal/cli", "internal/plan", "internal/campaign", "internal/orchestrator", "bench",
		"internal/analysis", "internal/platform/platformtest"}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = testutil.ModuleRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		if pkg == "internal/spec" || slices.Contains(allowed, pkg) {
			continue
		}
		if slices.Contains(f[1:], mod+"internal/spec") {
			t.Errorf("%s imports internal/spec (the experiment-file parser); the factor vocabulary is in internal/vocab, only %s parse", pkg, strings.Join(allowed, ", "))
		}
	}
}
