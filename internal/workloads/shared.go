package workloads

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// What users' workload kinds (package userkinds: exec, service) share
// with the built-ins: how a program of the machine is found and run, and
// the control protocol between a chain's roles. Their generators against
// a user's server are GeneratorOf's.

// FindProgram finds a program of this machine (or of the agent image) as
// the built-ins find their tools.
func FindProgram(name string) (string, error) { return findProgram(name) }

// ToolCommand is a command for path in a process group of its own, killed
// with the agent, as the built-ins run their tools.
func ToolCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	return toolCommand(ctx, path, args...)
}

// Listen is the server role's control listener on the address env gives.
func Listen(ctx context.Context, env workload.Env) (net.Listener, error) { return listen(ctx, env) }

// ShutdownGently shuts srv down, giving its requests a few seconds.
func ShutdownGently(ctx context.Context, srv *http.Server) { shutdownGently(ctx, srv) }

// SayDone tells the server's agent at target (its control address) that
// the client's run is over.
func SayDone(ctx context.Context, target string) error {
	_, err := finish(ctx, &http.Client{Timeout: 10 * time.Second}, "http://"+target+"/done")
	return err
}
