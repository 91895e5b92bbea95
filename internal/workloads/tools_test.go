package workloads

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A tool dies with the agent that started it, even killed with SIGKILL
// (nothing of the agent runs then): a user's server would otherwise hold
// its port after the trial. The agent here is this test binary, run again
// as a child that starts `sleep 60` and prints its pid.
func TestToolDiesWithItsAgent(t *testing.T) {
	if os.Getenv("CTRBENCH_TOOL_CHILD") == "1" {
		cmd := toolCommand(context.Background(), "/bin/sleep", "60")
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		return
	}
	agent := exec.Command(os.Args[0], "-test.run", "^TestToolDiesWithItsAgent$")
	agent.Env = append(os.Environ(), "CTRBENCH_TOOL_CHILD=1")
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(line[:max(0, len(line)-1)])
	if err != nil || perr != nil {
		agent.Process.Kill()
		t.Fatalf("the child said %q (%v)", line, err)
	}
	agent.Process.Kill()
	agent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the tool (pid %d) outlived its agent by 5 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
