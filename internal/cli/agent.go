package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/agent"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/nestedparent"
	"github.com/ctrbench/ctrbench/internal/vminit"
	"github.com/ctrbench/ctrbench/internal/wireguard"
)

// newAgentCmd is `agent`, the in-instance side of ctrbench: its
// subcommands are what ctrbench starts inside the instances, emulated
// hosts and machines it runs.
func newAgentCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "agent",
		Short:  "The in-container side: run one role of one workload (started by `run`)",
		Hidden: false,
	}
	run := agentCmd(invocation.Run, "Run one role of a workload once and print JSON events on stdout", agent.Run)
	loop := agentCmd(invocation.Loop, "Run a workload over and over as a neighbour until stopped (SIGTERM); print when it was busy", agent.Loop)
	c.AddCommand(run, loop, agentWireGuardCmd(), agentParentCmd(), agentVMCmd(), agentHoldCmd(), agentSignalCmd())
	return c
}

// agentWireGuardCmd is `agent wireguard`: a userspace WireGuard tunnel in
// an emulated host's network namespace.
func agentWireGuardCmd() *cobra.Command {
	var wgConfig *string
	wg := &cobra.Command{
		Use:   "wireguard",
		Short: "Run a userspace WireGuard tunnel (wireguard-go) in this process's network namespace until stopped",
		Long: `Started by ctrbench inside an emulated host's network namespace for the
overlay-encrypted network: creates the TUN device, configures wireguard-go,
prints {"event":"ready"} and runs until SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg wireguard.Config
			if *wgConfig == "" {
				return usageError{fmt.Errorf("agent wireguard needs its configuration (--config)")}
			}
			if err := json.Unmarshal([]byte(*wgConfig), &cfg); err != nil {
				return usageError{fmt.Errorf("--config: %w", err)}
			}
			out := cmd.OutOrStdout()
			return wireguard.Run(cmd.Context(), cfg, cmd.ErrOrStderr(), func() {
				fmt.Fprintln(out, `{"event":"ready"}`)
			})
		},
	}
	wgConfig = invocation.BindWireGuard(wg.Flags())
	return wg
}

// agentParentCmd is `agent parent`: a nested parent container's init.
func agentParentCmd() *cobra.Command {
	var parentConfig string
	parent := &cobra.Command{
		Use:   "parent",
		Short: "Be a nested parent container's init: run its own Docker Engine until stopped",
		Long: `Started by the nested platform as the first process of a parent container:
starts dockerd (which starts containerd) with the parent's own data root,
bridge subnet and socket, its children's cgroups below the parent's, reaps
orphans and passes SIGTERM on.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := nestedparent.Parse(parentConfig)
			if err != nil {
				return usageError{err}
			}
			return nestedparent.Run(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
	parent.Flags().StringVar(&parentConfig, "config", "", "the parent's configuration (JSON, written by the nested platform)")
	return parent
}

// agentVMCmd is `agent vm`: a ctrbench virtual machine's init.
func agentVMCmd() *cobra.Command {
	vm := &cobra.Command{
		Use:   "vm",
		Short: "Be a ctrbench virtual machine's init: ready the machine, run one agent, power off",
		Long: `Run by the kernel of a virtual machine the vm platform boots (rdinit=/ctrbench
-- agent vm): mounts the kernel's file systems, loads the virtio modules,
configures the network and the data disk from the kernel command line, runs
the agent with its output on the second serial port, and powers off.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getpid() != 1 {
				return usageError{fmt.Errorf("agent vm is a virtual machine's init (PID 1), not a command to run")}
			}
			return vminit.Run(cmd.ErrOrStderr())
		},
	}
	return vm
}

// agentHoldCmd is `agent hold`: the holder of an emulated host's network
// namespace in a container.
func agentHoldCmd() *cobra.Command {
	hold := &cobra.Command{
		Use:   "hold",
		Short: "Hold this process's network namespace for an emulated host until stopped (SIGTERM)",
		Long: `The first process of a container started with --network none whose network
namespace ctrbench's lab adopts as an emulated host's: Docker shares a
namespace only by container, so the host's namespace is this container's,
and the campaign's containers on that host's network join it. Does nothing
until SIGTERM or SIGINT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			<-cmd.Context().Done()
			return nil
		},
	}
	return hold
}

// agentSignalCmd is `agent signal`: what a platform without a call to
// signal its instance's agent runs inside it.
func agentSignalCmd() *cobra.Command {
	var pid int
	c := &cobra.Command{
		Use:   "signal go|stop",
		Short: "Signal the agent of this instance: go (begin the measured run) or stop (print the result and end)",
		Long: `Run by ctrbench inside an instance it cannot signal from outside (a
Kubernetes pod's container, through exec): sends the agent, the instance's
first process unless --pid says otherwise, SIGUSR1 (go) or SIGTERM (stop).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agent.Signal(args[0], pid); err != nil {
				return usageError{err}
			}
			return nil
		},
	}
	c.Flags().IntVar(&pid, "pid", 1, "the agent's process")
	return c
}

// agentCmd is `agent run` or `agent loop`: its flags are the invocation's,
// defined and decoded by package invocation.
func agentCmd(kind invocation.Kind, short string, do func(context.Context, agent.Options) error) *cobra.Command {
	var d *invocation.Decoder
	c := &cobra.Command{
		Use:   string(kind),
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			inv, err := d.Decode()
			if err != nil {
				return usageError{err}
			}
			inv.Key = agent.TakeKey()
			return do(cmd.Context(), agent.Options{Agent: inv, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
		},
	}
	d = invocation.Bind(kind, c.Flags())
	return c
}
