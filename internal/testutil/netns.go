package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// HoldNetNS starts a process holding a network namespace of its own
// (unshare --net), as a container holds one, and returns its namespace's
// path (/proc/<pid>/ns/net) once the process is in it, and a channel that
// receives when the process ends. It is killed when the test ends; without
// unshare the test is skipped.
func HoldNetNS(t testing.TB) (path string, ended <-chan error) {
	t.Helper()
	holder := exec.Command("unshare", "--net", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Skipf("unshare: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- holder.Wait() }()
	t.Cleanup(func() { _ = holder.Process.Kill() })
	path = fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)
	self, _ := os.Readlink("/proc/self/ns/net")
	// unshare forks nothing: the namespace changes once it has run.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if own, err := os.Readlink(path); err == nil && own != self {
			return path, done
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder never left this namespace")
		}
	}
}
