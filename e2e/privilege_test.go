package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform/nested"
)

// What ctrbench's containers may reach of the machine, looked at while a
// campaign runs them — Docker containers on a bridge with a volume, and
// nested parents with their children:
//   - no container gets the machine engine's socket;
//   - a Docker container gets no host path at all (its storage is a named
//     volume of the campaign's);
//   - an engine-running container (a nested parent) binds only
//     ctrbench's own directories below /var/lib/ctrbench and the cgroup
//     hierarchy, and is not on the host's network;
//   - a nested child gets no host path;
//   - no engine of ctrbench's listens on a TCP port of the machine's
//     network namespace.
func TestContainersGetOnlyWhatTheyAskFor(t *testing.T) {
	requireDocker(t)
	exp := writeExperiment(t, `name: e2e-privileges
seed: 1
repetitions: 1
warmup: 0
timeout: 60s
factors:
  platform: [docker, nested]
  network: [bridge, host]
  storage: [volume, layer]
exclude:
  - {platform: docker, network: host}
  - {platform: docker, storage: layer}
  - {platform: nested, network: bridge}
  - {platform: nested, storage: volume}
workloads:
  - {name: p, type: cpu.primes, params: {duration: 4s, max_prime: "2000"}}
`)
	db := filepath.Join(t.TempDir(), "r.db")
	run := startRun(t, "run", exp, "--db", db, "--no-report")
	ctx := context.Background()
	seen := map[string]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for !(seen["docker"] && seen["child"]) && time.Now().Before(deadline) {
		select {
		case <-run.done:
			deadline = time.Now()
			continue
		case <-time.After(300 * time.Millisecond):
		}
		m := campaignLine.FindStringSubmatch(run.stderr.String())
		if m == nil {
			continue
		}
		id := m[1]
		ps, err := engine.Placements(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			engineRunning := p.Privileged || len(p.Mounts) > 0 && hasCgroupBind(p)
			if engineRunning {
				if !seen["parent"] {
					t.Logf("a parent, %s: privileged %v, network %s, mounts %+v", p.Name, p.Privileged, p.NetworkMode, p.Mounts)
				}
				seen["parent"] = true
				if p.NetworkMode == "host" {
					t.Errorf("%s runs an engine on the host's network", p.Name)
				}
			} else {
				if !seen["docker"] {
					t.Logf("a container, %s: network %s, mounts %+v", p.Name, p.NetworkMode, p.Mounts)
				}
				seen["docker"] = true
			}
			for _, mt := range p.Mounts {
				checkMount(t, p.Name, mt, engineRunning)
			}
		}
		// The children, through each parent's own socket.
		socks, _ := filepath.Glob(filepath.Join(nested.WorkRoot, id, "s", "*", "docker.sock"))
		for _, s := range socks {
			cs, err := engine.Placements(ctx, id, engine.WithHost("unix://"+s))
			if err != nil {
				continue // the parent is starting or going
			}
			for _, c := range cs {
				seen["child"] = true
				for _, mt := range c.Mounts {
					checkMount(t, c.Name+" (a nested child)", mt, false)
				}
			}
		}
		if out, _ := exec.Command("ss", "-Hltnp").Output(); strings.Contains(string(out), "dockerd") {
			t.Errorf("an engine listens on a TCP port of the machine's namespace:\n%s", out)
		}
	}
	code := run.wait(t, 5*time.Minute)
	if code != 0 {
		t.Fatalf("run exited %d:\n%s", code, run.stderr)
	}
	for _, k := range []string{"docker", "parent", "child"} {
		if !seen[k] {
			t.Errorf("no %s container was seen running: nothing checked for it", k)
		}
	}
	assertNothingLeft(t, campaignID(t, run.stderr.String()))
}

func hasCgroupBind(p engine.Placement) bool {
	for _, m := range p.Mounts {
		if m.Type == "bind" && m.Source == "/sys/fs/cgroup" {
			return true
		}
	}
	return false
}

// checkMount fails a mount the container did not ask for.
func checkMount(t *testing.T, name string, m engine.MountPoint, engineRunning bool) {
	t.Helper()
	if strings.HasSuffix(m.Source, "docker.sock") || m.Source == "/var/run" || m.Source == "/run" {
		t.Errorf("%s gets the engine's socket: %+v", name, m)
	}
	switch m.Type {
	case "volume", "tmpfs":
		return
	case "bind":
		if !engineRunning {
			t.Errorf("%s gets a host path: %+v", name, m)
			return
		}
		if m.Source == "/sys/fs/cgroup" || strings.HasPrefix(m.Source, "/var/lib/ctrbench/") {
			return
		}
		if _, err := os.Stat(m.Source); err == nil {
			t.Errorf("%s binds %s, outside ctrbench's directories", name, m.Source)
		}
	default:
		t.Errorf("%s has a %s mount: %+v", name, m.Type, m)
	}
}
