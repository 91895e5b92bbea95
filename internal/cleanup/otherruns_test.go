package cleanup

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestMain: re-executed as `ctrbench run` (argv[0] "ctrbench"), the test
// binary only waits, standing for another campaign.
func TestMain(m *testing.M) {
	if os.Getenv("CTRBENCH_CLEANUP_STANDIN") != "" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// standIn starts this test binary as `ctrbench run`, with cloneflags for
// namespaces of its own; it is killed at the end.
func standIn(t *testing.T, cloneflags uintptr) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: self, Args: []string{"ctrbench", "run"}, Env: append(os.Environ(), "CTRBENCH_CLEANUP_STANDIN=1"),
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: cloneflags, Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process with namespaces of its own here: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)
	// Its command line is ours until exec: wait for argv[0] to change.
	for i := 0; i < 100; i++ {
		if b, _ := os.ReadFile("/proc/" + pid + "/cmdline"); len(b) > 8 && string(b[:8]) == "ctrbench" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pid
}

// A run in a mount and network namespace of its own (a container, an
// emulated machine) names its namespaces and links there: clean here does
// not wait for it. A process in ours shares them. (The one here is not
// named `ctrbench run`: another package's clean running meanwhile would
// count it.)
func TestOtherRunsInOurNamespacesOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces of its own need root")
	}
	apart := standIn(t, syscall.CLONE_NEWNS|syscall.CLONE_NEWNET)
	if runs := OtherRuns(); slices.Contains(runs, apart) {
		t.Errorf("a run with mount and network namespaces of its own (pid %s) counted: %v", apart, runs)
	}
	if sharesNamespaces(apart) {
		t.Errorf("pid %s shares our namespaces", apart)
	}
	here := exec.Command("sleep", "30")
	if err := here.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = here.Process.Kill(); _ = here.Wait() })
	if !sharesNamespaces(strconv.Itoa(here.Process.Pid)) {
		t.Errorf("a child in our namespaces (pid %d) does not share them", here.Process.Pid)
	}
}
