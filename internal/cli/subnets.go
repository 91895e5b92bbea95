package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/subnets"
)

// newSubnetsCmd prints the addresses ctrbench configures for a
// Kubernetes cluster it builds, from the pool's layout (written once, in
// package subnets): scripts/k8s.sh reads them as shell variables.
func newSubnetsCmd() *cobra.Command {
	var pool string
	var nodes int
	var shell bool
	c := &cobra.Command{
		Use:   "subnets",
		Short: "Print the subnet pool's Kubernetes address plan: node network, Service range, each node's pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := subnets.Default()
			if pool != "" {
				var err error
				if p, err = subnets.Parse(pool); err != nil {
					return usageError{err}
				}
			}
			if nodes < 1 || nodes > subnets.MaxK8sNodes {
				return usageError{fmt.Errorf("--nodes %d: a cluster on the pool has 1 to %d nodes", nodes, subnets.MaxK8sNodes)}
			}
			printK8sPlan(cmd.OutOrStdout(), p, nodes, shell)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&pool, "subnet-pool", "", "the IPv4 /15 the addresses come from (default "+subnets.DefaultPool+")")
	f.IntVar(&nodes, "nodes", 2, "how many nodes")
	f.BoolVar(&shell, "shell", false, "print NAME=VALUE lines a shell script can eval")
	return c
}

func printK8sPlan(w io.Writer, p subnets.Pool, nodes int, shell bool) {
	k := p.K8s()
	line := func(name, what, v string) {
		if shell {
			fmt.Fprintf(w, "%s=%s\n", name, v)
		} else {
			fmt.Fprintf(w, "%-32s %s\n", what, v)
		}
	}
	line("K8S_POOL", "subnet pool", p.String())
	line("K8S_NODE_NET", "node network", k.Nodes.String())
	line("K8S_GATEWAY", "the machine on it", subnets.Gateway(k.Nodes).String())
	line("K8S_SERVICE_NET", "Service (ClusterIP) range", k.Services.String())
	line("K8S_POD_NET", "pods (cluster CIDR)", k.Pods.String())
	for n := 1; n <= nodes; n++ {
		line(fmt.Sprintf("K8S_NODE%d_IP", n), fmt.Sprintf("node %d", n), k.Node(n).String())
		line(fmt.Sprintf("K8S_NODE%d_PODS", n), fmt.Sprintf("node %d's pods", n), k.NodePods(n).String())
	}
}
