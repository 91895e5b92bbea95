package testutil

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DeadPID is the pid of a child that has exited and been reaped.
func DeadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// LivePID starts a sleeping child whose command line is argv0, as a
// stand-in for a running ctrbench (or, with another argv0, for an
// unrelated process that reuses a pid); it is killed when the test ends.
// It returns once the child has exec'd: until then /proc/<pid>/cmdline is
// still the test binary's.
func LivePID(t testing.TB, argv0 string) int {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	cmd.Args[0] = argv0
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		if strings.HasPrefix(string(b), argv0+"\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's command line is still %q, not %s's", b, argv0)
		}
	}
	return cmd.Process.Pid
}
