package nestedparent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The engine's command line: its own socket, data root and bridge subnet;
// the children's cgroups below the parent's; without a bridge, no bridge
// and no iptables rules at all.
func TestArgs(t *testing.T) {
	c := Config{Socket: "/ctb/docker.sock", DataRoot: "/var/lib/docker", BIP: "198.19.3.1/24"}
	args := strings.Join(c.Args("/docker/abc"), " ")
	for _, want := range []string{"--host unix:///ctb/docker.sock", "--data-root /var/lib/docker", "--bip 198.19.3.1/24", "--cgroup-parent /docker/abc"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	c.BIP, c.Bridge = "", "ctbnp1234"
	args = strings.Join(c.Args("/"), " ")
	if !strings.Contains(args, "--bridge ctbnp1234 --iptables=false --ip-masq=false --ip-forward=false") || strings.Contains(args, "none") {
		t.Errorf("on the machine's network: %q (never --bridge none there: it deletes docker0)", args)
	}
	c.Bridge = ""
	args = strings.Join(c.Args("/"), " ")
	if !strings.Contains(args, "--bridge none --iptables=false") || strings.Contains(args, "--cgroup-parent") {
		t.Errorf("without a bridge: %q", args)
	}
	back, err := Parse(c.String())
	if err != nil || back != c {
		t.Errorf("round trip: %+v %v", back, err)
	}
	if _, err := Parse(`{"socket":""}`); err == nil {
		t.Error("a configuration without a socket was accepted")
	}
}

// The parent's own cgroup, as the host sees it: the memory controller's
// line of /proc/self/cgroup.
func TestOwnCgroup(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cgroup")
	os.WriteFile(f, []byte("12:hugetlb:/\n4:memory:/ctrbench/c1/machine/abc\n3:cpu,cpuacct:/ctrbench/c1/machine/abc\n0::/\n"), 0o644)
	got, err := ownCgroup(f)
	if err != nil || got != "/ctrbench/c1/machine/abc" {
		t.Errorf("ownCgroup = %q, %v", got, err)
	}
}

// A preloaded data root: the store's image metadata copied, its layers'
// contents mounted read-only (shared, never written), the seed engine's
// own networks and containers left behind.
func TestPopulate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	store, dst := t.TempDir(), t.TempDir()
	for path, content := range map[string]string{
		"image/overlay2/repositories.json": "{}",
		"overlay2/abc/diff/ctrbench":       "binary",
		"overlay2/abc/link":                "L1",
		"network/files/local-kv.db":        "seed's networks",
	} {
		p := filepath.Join(store, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	os.MkdirAll(filepath.Join(store, "overlay2/l"), 0o755)
	os.Symlink("../abc/diff", filepath.Join(store, "overlay2/l/L1"))
	if err := Populate(dst, store); err != nil {
		t.Fatal(err)
	}
	diff := filepath.Join(dst, "overlay2/abc/diff")
	t.Cleanup(func() { _ = unix.Unmount(diff, unix.MNT_DETACH) })
	if b, _ := os.ReadFile(filepath.Join(diff, "ctrbench")); string(b) != "binary" {
		t.Errorf("the layer's content is not there: %q", b)
	}
	if err := os.WriteFile(filepath.Join(diff, "new"), []byte("x"), 0o644); err == nil {
		t.Error("a layer of the store is writable")
	}
	if l, _ := os.Readlink(filepath.Join(dst, "overlay2/l/L1")); l != "../abc/diff" {
		t.Errorf("short link %q", l)
	}
	if _, err := os.Stat(filepath.Join(dst, "network")); !os.IsNotExist(err) {
		t.Error("the seed engine's networks were carried over")
	}
	if !slices.Contains(storeDirs, "image") || !isLayerDiff("overlay2/abc/diff") || isLayerDiff("overlay2/abc/work") {
		t.Error("store layout")
	}
}
