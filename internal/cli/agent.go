package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/agent"
	"github.com/ctrbench/ctrbench/internal/telemetry"
	"github.com/ctrbench/ctrbench/internal/wireguard"
)

func newAgentCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "agent",
		Short:  "The in-container side: run one role of one workload (started by `run`)",
		Hidden: false,
	}
	o := agent.Options{}
	var join, tele string
	var startAt int64
	run := &cobra.Command{
		Use:   "run",
		Short: "Run one role of a workload once and print JSON events on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if join != "" {
				o.JoinCgroups = strings.Split(join, ",")
			}
			sc, err := telemetryScope(tele)
			if err != nil {
				return err
			}
			o.Telemetry = sc
			if startAt > 0 {
				o.StartAt = time.Unix(0, startAt)
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
	f.StringArrayVar(&o.Antagonists, "antagonist", nil, "a neighbour to loop beside the target in this instance: TYPE=PARAMS_JSON, or idle (repeatable)")
	f.StringVar(&tele, "telemetry", "", "counters that are this instance's own: cgroup, netns (comma-separated)")
	f.StringVar(&join, "join-cgroups", "", "cgroup directories to enter before any work (comma-separated)")
	f.BoolVar(&o.WaitNet, "wait-net", false, "wait until an interface besides loopback has an address (ctrbench wires the namespace from outside)")
	f.Int64Var(&startAt, "start-at", 0, "begin the measured run at this time (Unix nanoseconds), so several pairs start together")
	_ = run.MarkFlagRequired("workload")
	lo := agent.Options{}
	var loopJoin, loopTele string
	loop := &cobra.Command{
		Use:   "loop",
		Short: "Run a workload over and over as a neighbour until stopped (SIGTERM); print when it was busy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lo.Stdout, lo.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if loopJoin != "" {
				lo.JoinCgroups = strings.Split(loopJoin, ",")
			}
			sc, err := telemetryScope(loopTele)
			if err != nil {
				return err
			}
			lo.Telemetry = sc
			return agent.Loop(cmd.Context(), lo)
		},
	}
	loop.Flags().StringVar(&lo.Workload, "workload", "", "workload type, or idle")
	loop.Flags().StringVar(&lo.Params, "params", "{}", "parameters as a JSON object of strings")
	loop.Flags().StringVar(&loopJoin, "join-cgroups", "", "cgroup directories to enter first (comma-separated)")
	loop.Flags().StringVar(&lo.DataDir, "data-dir", "", "directory in which disk neighbours write (default: the system's temporary directory)")
	loop.Flags().StringVar(&loopTele, "telemetry", "", "counters that are this instance's own: cgroup, netns (comma-separated)")
	_ = loop.MarkFlagRequired("workload")
	var wgConfig string
	wg := &cobra.Command{
		Use:   "wireguard",
		Short: "Run a userspace WireGuard tunnel (wireguard-go) in this process's network namespace until stopped",
		Long: `Started by ctrbench inside an emulated host's network namespace for the
overlay-encrypted network: creates the TUN device, configures wireguard-go,
prints {"event":"ready"} and runs until SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg wireguard.Config
			if err := json.Unmarshal([]byte(wgConfig), &cfg); err != nil {
				return usageError{fmt.Errorf("--config: %w", err)}
			}
			out := cmd.OutOrStdout()
			return wireguard.Run(cmd.Context(), cfg, cmd.ErrOrStderr(), func() {
				fmt.Fprintln(out, `{"event":"ready"}`)
			})
		},
	}
	wg.Flags().StringVar(&wgConfig, "config", "", "the tunnel as JSON: interface, mtu, address, private_key, listen_port, peers")
	_ = wg.MarkFlagRequired("config")
	c.AddCommand(run, loop, wg)
	return c
}

// telemetryScope reads --telemetry: which counters are the instance's own.
func telemetryScope(s string) (telemetry.Scope, error) {
	var sc telemetry.Scope
	for _, t := range strings.Split(s, ",") {
		switch t {
		case "cgroup":
			sc.Cgroup = true
		case "netns":
			sc.Netns = true
		case "":
		default:
			return sc, usageError{fmt.Errorf("--telemetry: unknown scope %q (cgroup, netns)", t)}
		}
	}
	return sc, nil
}
