package agent

import (
	"fmt"
	"syscall"
)

// The signals an agent takes from ctrbench, by the words `agent signal`
// takes: go begins a copy's measured run (after WaitGo), stop asks a
// neighbour's loop (or a lingering agent) to print its result and end.
var agentSignals = map[string]syscall.Signal{"go": syscall.SIGUSR1, "stop": syscall.SIGTERM}

// SignalWords are the words Signal takes, for its usage.
const SignalWords = "go, stop"

// Signal sends the agent whose process is pid the signal what names. A
// platform that can run a command in an instance but has no call to
// signal it (Kubernetes: exec) runs `ctrbench agent signal WHAT` there;
// the agent is the container's first process, PID 1, which takes a
// signal only for which it listens — as the agent does for these.
func Signal(what string, pid int) error {
	sig, ok := agentSignals[what]
	if !ok {
		return fmt.Errorf("no signal %q: it is one of %s", what, SignalWords)
	}
	if pid <= 0 {
		return fmt.Errorf("no process %d to signal", pid)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling process %d (%s): %w", pid, what, err)
	}
	return nil
}
