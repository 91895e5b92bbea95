// Command ctrbench measures what containers cost microservices. The same
// static binary is the orchestrator and the in-container agent.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ctrbench/ctrbench/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore default handling so a second
		// Ctrl-C kills at once while cleanup runs.
		<-ctx.Done()
		stop()
	}()
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
