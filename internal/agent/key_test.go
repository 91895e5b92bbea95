package agent

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/invocation"
)

// The key leaves the agent's environment, and what the agent runs can
// neither read the agent's environment nor gain CAP_SYS_PTRACE to do so
// (as root, as a native agent's workload runs), nor open the agent's
// stdout through /proc. In a child process: the
// test changes its process for good.
func TestTakeKey(t *testing.T) {
	if os.Getenv("CTRBENCH_TAKEKEY_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTakeKey$", "-test.v")
		cmd.Env = append(os.Environ(), "CTRBENCH_TAKEKEY_CHILD=1", invocation.KeyEnv+"=s3cr3t-key")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	if got := TakeKey(); got != "s3cr3t-key" {
		t.Fatalf("TakeKey = %q", got)
	}
	if v, ok := os.LookupEnv(invocation.KeyEnv); ok {
		t.Fatalf("the key is still in the environment: %q", v)
	}
	// A child, as a workload is started: its own environment lacks the
	// key, it cannot read ours, and it holds no CAP_SYS_PTRACE.
	out, _ := exec.Command("sh", "-c", `env; echo ---; cat /proc/$PPID/environ 2>&1; echo; echo ---; grep CapBnd /proc/self/status; (echo forged > /proc/$PPID/fd/1) 2>/dev/null && echo WROTE-TO-AGENT`).CombinedOutput()
	parts := strings.Split(string(out), "---")
	if len(parts) != 3 {
		t.Fatalf("unexpected output:\n%s", out)
	}
	if strings.Contains(parts[0], "s3cr3t") {
		t.Errorf("the child inherited the key:\n%s", parts[0])
	}
	if strings.Contains(parts[1], "s3cr3t") {
		t.Errorf("the child read the agent's environment:\n%s", parts[1])
	}
	if strings.Contains(parts[2], "WROTE-TO-AGENT") {
		t.Errorf("the child opened the agent's stdout")
	}
	if os.Geteuid() == 0 {
		f := strings.Fields(parts[2])
		bnd, err := strconv.ParseUint(f[len(f)-1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if bnd&(1<<unix.CAP_SYS_PTRACE) != 0 {
			t.Errorf("the child may hold CAP_SYS_PTRACE: %s", parts[2])
		}
	}
}
