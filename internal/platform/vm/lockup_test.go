package vm

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// fakeMachine stands in for QEMU: its first boot writes a kernel lockup
// to the console and hangs; its second prints the agent's line and the
// exit line, as a machine that booted does.
const fakeMachine = `#!/bin/sh
c="$1"
if [ ! -e "$c.lockup" ] && [ ! -e "$c.booted" ]; then
	: > "$c.booted"
	echo "[   32.4] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [runc:166]" > "$c"
	exec sleep 60
fi
echo '{"agent":"line"}'
echo "ctrbench-vm-exit 0" > "$c"
`

// startFake starts an instance on the fake machine, as Start does after
// making its tap, disk and cgroup.
func startFake(t *testing.T, script string) *instance {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "qemu")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	old := qemuBinary
	qemuBinary = bin
	t.Cleanup(func() { qemuBinary = old })
	g, err := cgroup.Create("ctrbench-test-lockup/"+filepath.Base(dir), cgroup.Spec{Always: true})
	if err != nil {
		t.Skip("no cgroup to put the machine in:", err)
	}
	t.Cleanup(func() { _ = g.Remove(); cgroup.RemoveTree("ctrbench-test-lockup") })
	console := filepath.Join(dir, "console.log")
	disk := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(disk, []byte("written by the first boot"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := &instance{name: "fake", dir: dir, console: console, disk: disk, group: g, args: []string{console},
		done: make(chan struct{}), Clock: platform.NewClock(time.Now())}
	b, err := in.boot()
	if err != nil {
		t.Fatal(err)
	}
	in.cur = b
	in.stdout, in.pw = io.Pipe()
	go in.supervise(b)
	return in
}

// TestLockupBeforeOutputReboots: a machine whose kernel locks up before
// its agent's output begins is booted once more; the trial sees the
// second boot's output and exit, and the restart is recorded.
func TestLockupBeforeOutputReboots(t *testing.T) {
	in := startFake(t, fakeMachine)
	line, err := bufio.NewReader(in.Stdout()).ReadString('\n')
	if err != nil || !strings.Contains(line, "agent") {
		t.Fatalf("agent's output %q %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ex, err := in.Wait(ctx)
	if err != nil || ex.Code != 0 {
		t.Fatalf("exit %+v %v", ex, err)
	}
	if got := in.Seen()[SeenRestarts]; got != "1" {
		t.Errorf("seen %s = %q, want 1", SeenRestarts, got)
	}
	if _, err := os.Stat(in.console + ".lockup"); err != nil {
		t.Errorf("the locked-up console is not kept: %v", err)
	}
	// The second boot had a data disk made anew, not the first's.
	f, err := os.Open(in.disk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 64)
	_, err = io.ReadFull(f, head)
	st, _ := f.Stat()
	if err != nil || strings.HasPrefix(string(head), "written by the first boot") || st.Size() != diskSize {
		t.Errorf("the data disk after the reboot: %d bytes starting %q, %v", st.Size(), head, err)
	}
}

// TestLockupAfterOutputFails: a lockup after the agent's output began
// ends the machine, and Wait says so as an error (the platform's).
func TestLockupAfterOutputFails(t *testing.T) {
	in := startFake(t, `#!/bin/sh
echo '{"agent":"line"}'
echo "[   40.1] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [exe:172]" > "$1"
exec sleep 60
`)
	go func() { _, _ = io.Copy(io.Discard, in.Stdout()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := in.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "locked up") {
		t.Fatalf("want the lockup as an error, got %v", err)
	}
	if got := in.Seen()[SeenRestarts]; got != "" {
		t.Errorf("restarted after the output began: %q", got)
	}
}
