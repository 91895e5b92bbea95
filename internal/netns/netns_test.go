package netns

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
}

// tempName returns a fresh "ctb..." namespace name and deletes the
// namespace when the test ends.
func tempName(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "ctbt" + hex.EncodeToString(b)
	t.Cleanup(func() {
		if err := Delete(name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return name
}

// threadNS is the network namespace of the calling goroutine's thread.
func threadNS(t *testing.T) string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Error(err)
	}
	return ns
}

func linkNames(t *testing.T) []string {
	t.Helper()
	ls, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Attrs().Name)
	}
	return out
}

func TestCreateListDelete(t *testing.T) {
	needRoot(t)
	name := tempName(t)
	path, err := Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/run/netns/"+name {
		t.Errorf("path = %s", path)
	}
	if _, err := Create(name); err == nil {
		t.Errorf("second Create of %s succeeded", name)
	}
	got, err := List("ctbt")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, name) {
		t.Errorf("List = %v, missing %s", got, name)
	}
	// iproute2 sees it too.
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil && !bytes.Contains(out, []byte(name)) {
		t.Errorf("ip netns list does not show %s:\n%s", name, out)
	}
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists: %v", path, err)
	}
	if err := Delete(name); err != nil {
		t.Errorf("deleting a missing namespace: %v", err)
	}
}

func TestNamesMustBePrefixed(t *testing.T) {
	for _, bad := range []string{"foo", "", "ctb/../x", "xctb"} {
		if _, err := Create(bad); err == nil {
			t.Errorf("Create(%q) succeeded", bad)
		}
		if err := Delete(bad); err == nil {
			t.Errorf("Delete(%q) succeeded", bad)
		}
	}
}

func TestDoSeesOtherLinksAndRestores(t *testing.T) {
	needRoot(t)
	path, err := Create(tempName(t))
	if err != nil {
		t.Fatal(err)
	}
	root := linkNames(t)
	var inside []string
	if err := Do(path, func() error {
		ls, err := netlink.LinkList()
		for _, l := range ls {
			inside = append(inside, l.Attrs().Name)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inside, []string{"lo"}) {
		t.Errorf("links inside = %v, want [lo]", inside)
	}
	if len(root) < 2 {
		t.Fatalf("root namespace has links %v", root)
	}

	// fn's error comes back; and after many concurrent Do calls every
	// thread of the process is still in the root namespace.
	sentinel := errors.New("sentinel")
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := Do(path, func() error { return sentinel }); !errors.Is(err, sentinel) {
				t.Errorf("Do returned %v", err)
			}
		})
	}
	wg.Wait()
	// Which namespace a thread is in is its ns/net link, not a count of
	// the links it sees: other tests (netlab's, run beside this package)
	// add and remove links in the root namespace meanwhile.
	rootNS := threadNS(t)
	for range 50 {
		wg.Go(func() {
			if ns := threadNS(t); ns != rootNS {
				t.Errorf("a thread is in %s, want the root namespace %s", ns, rootNS)
			}
		})
	}
	wg.Wait()
	if err := Do("/nonexistent", func() error { return nil }); err == nil {
		t.Error("Do on a missing path succeeded")
	}
}

func TestStartRunsInside(t *testing.T) {
	needRoot(t)
	path, err := Create(tempName(t))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/net/dev")
	cmd.Stdout = &out
	if err := Start(path, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var ifaces []string
	for _, line := range strings.Split(out.String(), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if !slices.Equal(ifaces, []string{"lo"}) {
		t.Errorf("/proc/net/dev inside lists %v, want [lo]:\n%s", ifaces, out.String())
	}

	if _, err := exec.LookPath("ip"); err == nil {
		cmd := exec.Command("ip", "-o", "link")
		out.Reset()
		cmd.Stdout = &out
		if err := Start(path, cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], ": lo:") {
			t.Errorf("ip -o link inside:\n%s", out.String())
		}
	}
}

func TestDeleteKillsProcesses(t *testing.T) {
	needRoot(t)
	name := tempName(t)
	path, err := Create(name)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := Start(path, cmd); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	start := time.Now()
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("sleep ended with %v", err)
		}
		if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("sleep ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("sleep still running 5 s after Delete")
	}
	t.Logf("Delete and kill took %v", time.Since(start))
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists", path)
	}
}

func TestSysctlIsPerNamespace(t *testing.T) {
	needRoot(t)
	path, err := Create(tempName(t))
	if err != nil {
		t.Fatal(err)
	}
	const file = "/proc/sys/net/ipv4/ip_forward"
	read := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	readInside := func() string {
		var v string
		if err := Do(path, func() error {
			b, err := os.ReadFile(file)
			v = strings.TrimSpace(string(b))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	rootBefore := read()
	want := "1"
	if readInside() == "1" {
		want = "0"
	}
	if err := Sysctl(path, "net.ipv4.ip_forward", want); err != nil {
		t.Fatal(err)
	}
	if got := readInside(); got != want {
		t.Errorf("ip_forward inside = %s, want %s", got, want)
	}
	if got := read(); got != rootBefore {
		t.Errorf("root ip_forward changed from %s to %s", rootBefore, got)
	}
	if err := Sysctl(path, "net.ipv4.no_such_key", "1"); err == nil {
		t.Error("writing a missing key succeeded")
	}
}

// TestAdoptNamesAHeldNamespace adopts the namespace of a process that made
// its own (unshare), as the lab adopts a container's: the name is that
// namespace (same inode), Delete kills its holder, and the name is gone.
func TestAdoptNamesAHeldNamespace(t *testing.T) {
	needRoot(t)
	src, waited := testutil.HoldNetNS(t)
	var want syscall.Stat_t
	if err := syscall.Stat(src, &want); err != nil {
		t.Fatal(err)
	}
	name := tempName(t)
	if _, err := Adopt(name, ""); err == nil {
		t.Error("Adopt with no namespace succeeded")
	}
	path, err := Adopt(name, src)
	if err != nil {
		t.Fatal(err)
	}
	var got syscall.Stat_t
	if err := syscall.Stat(path, &got); err != nil {
		t.Fatal(err)
	}
	if got.Ino != want.Ino || got.Dev != want.Dev {
		t.Errorf("%s is namespace %d:%d, the holder's is %d:%d", path, got.Dev, got.Ino, want.Dev, want.Ino)
	}
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Error("the holder still runs after Delete")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists", path)
	}
}
