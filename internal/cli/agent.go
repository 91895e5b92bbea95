package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/agent"
)

func newAgentCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "agent",
		Short:  "The in-container side: run one role of one workload (started by `run`)",
		Hidden: false,
	}
	o := agent.Options{}
	var join, tele string
	run := &cobra.Command{
		Use:   "run",
		Short: "Run one role of a workload once and print JSON events on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if join != "" {
				o.JoinCgroups = strings.Split(join, ",")
			}
			for _, t := range strings.Split(tele, ",") {
				switch t {
				case "cgroup":
					o.Telemetry.Cgroup = true
				case "netns":
					o.Telemetry.Netns = true
				case "":
				default:
					return usageError{fmt.Errorf("--telemetry: unknown scope %q (cgroup, netns)", t)}
				}
			}
			return agent.Run(cmd.Context(), o)
		},
	}
	f := run.Flags()
	f.StringVar(&o.Workload, "workload", "", "workload type, e.g. cpu.primes")
	f.StringVar(&o.Role, "role", "main", "role: main, server or client")
	f.StringVar(&o.Params, "params", "{}", "parameters as a JSON object of strings")
	f.StringVar(&o.Bind, "bind", "127.0.0.1", "address a server listens on")
	f.StringVar(&o.Target, "target", "", "host:port of the server, for a client")
	f.StringVar(&o.DataDir, "data-dir", "", "directory in which disk workloads write (default: the system's temporary directory)")
	f.StringVar(&tele, "telemetry", "", "counters that are this instance's own: cgroup, netns (comma-separated)")
	f.StringVar(&join, "join-cgroups", "", "cgroup directories to enter before any work (comma-separated)")
	_ = run.MarkFlagRequired("workload")
	c.AddCommand(run)
	return c
}
