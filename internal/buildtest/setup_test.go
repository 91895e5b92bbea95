package buildtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// setupFunctions is scripts/setup.sh's functions named, for a test to
// call one alone.
func setupFunctions(t *testing.T, names ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(), "scripts", "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	lines := strings.Split(string(b), "\n")
	for _, name := range names {
		in := false
		for _, l := range lines {
			if strings.HasPrefix(l, name+"() {") {
				in = true
			}
			if in {
				out = append(out, l)
			}
			if in && l == "}" {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// Setup never removes or downgrades a package: an install that would
// (podman-docker replaces docker.io, as Debian's docker.io would replace
// an engine from Docker's repository) is refused, naming what apt would
// have removed, before apt changes anything.
func TestSetupRefusesToRemoveAPackage(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs apt-get and root")
	}
	sim, _ := exec.Command("apt-get", "install", "-s", "podman-docker").CombinedOutput()
	var removed string
	for _, l := range strings.Split(string(sim), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Remv" {
			removed = f[1]
		}
	}
	if removed == "" {
		t.Skip("installing podman-docker would remove nothing here (no docker.io installed)")
	}
	script := "set -euo pipefail\n" + setupFunctions(t, "log", "refuse_removals") + "\nrefuse_removals podman-docker\necho installed\n"
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err == nil || strings.Contains(string(out), "installed\n") {
		t.Fatalf("refuse_removals let an install that removes %s through:\n%s", removed, out)
	}
	for _, want := range []string{"refusing to install podman-docker", "removes " + removed, "never removes or downgrades"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if st, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", removed).Output(); !strings.Contains(string(st), "install ok installed") {
		t.Errorf("%s is no longer installed (%s)", removed, st)
	}
}

// Setup on a machine whose Docker Engine answers uses it as it is: the
// same daemon process, version and daemon.json before and after.
func TestSetupLeavesTheMachinesEngineAlone(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("runs scripts/setup.sh: needs root")
	}
	if err := exec.Command("docker", "version").Run(); err != nil {
		t.Skip("no Docker Engine answers")
	}
	state := func() string {
		v, _ := exec.Command("docker", "version", "--format", "{{.Server.Version}} {{.Server.APIVersion}}").Output()
		pid, _ := exec.Command("pgrep", "-o", "-x", "dockerd").Output()
		conf, _ := os.ReadFile("/etc/docker/daemon.json")
		return string(bytes.TrimSpace(v)) + " pid " + string(bytes.TrimSpace(pid)) + " daemon.json " + string(conf)
	}
	before := state()
	out, err := exec.Command("bash", filepath.Join(testutil.ModuleRoot(), "scripts", "setup.sh")).CombinedOutput()
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "a Docker Engine answers") || !strings.Contains(string(out), "left alone") {
		t.Errorf("setup does not say it uses the engine as it is:\n%s", out)
	}
	if after := state(); after != before {
		t.Errorf("setup changed the machine's engine:\nbefore %s\nafter  %s\n%s", before, after, out)
	}
}
