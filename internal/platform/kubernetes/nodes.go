package kubernetes

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// The kubernetes platform's own factors that pick nodes by what they run:
// a node says its kube-proxy mode, its CNI plugin and its kubelet's CPU
// manager policy by a label (scripts/k8s.sh's nodes do; on a cluster of
// yours, `kubectl label node`), and a pod of a cell with a level other than
// any goes to a node with that label — so one cluster whose nodes differ
// measures the difference.
const (
	FKubeProxy  = "kube_proxy"
	FCNI        = "cni"
	FCPUManager = "cpu_manager"
	// LevelAny places pods on any node: whatever the cluster runs.
	LevelAny = "any"
)

// The node labels those factors read.
const (
	LabelKubeProxy  = "ctrbench.io/kube-proxy"
	LabelCNI        = "ctrbench.io/cni"
	LabelCPUManager = "ctrbench.io/cpu-manager"
)

// nodeFactors are the factors that pick nodes by a label, by factor.
var nodeFactors = map[string]string{FKubeProxy: LabelKubeProxy, FCNI: LabelCNI, FCPUManager: LabelCPUManager}

var kubeProxyFactor = platform.Factor{
	Name:    FKubeProxy,
	Default: LevelAny,
	Doc: "the kube-proxy mode of the nodes the cell's pods run on: any (the default: whatever the cluster runs), iptables, nftables or ipvs — " +
		"a node says its mode by its label " + LabelKubeProxy + " (the test cluster's nodes do: scripts/k8s.sh up --proxy-mode iptables,nftables); a Service's hop is its client's node's kube-proxy",
	Check: anyCase(LevelAny, "iptables", "nftables", "ipvs"),
}

// cniName is what a CNI plugin's name may be: a label value.
var cniName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)

var cniFactor = platform.Factor{
	Name:    FCNI,
	Default: LevelAny,
	Doc: "the CNI plugin of the nodes the cell's pods run on: any (the default: whatever the cluster runs) or a plugin's name (bridge, ptp, calico, cilium…) — " +
		"a node says its plugin by its label " + LabelCNI + " (the test cluster's nodes do: scripts/k8s.sh up --cni bridge,ptp)",
	Check: func(v string) (string, error) {
		v = strings.ToLower(v)
		if !cniName.MatchString(v) {
			return "", fmt.Errorf("want %s or a CNI plugin's name as its nodes' %s label gives it (bridge, ptp, calico…)", LevelAny, LabelCNI)
		}
		return v, nil
	},
}

var cpuManagerFactor = platform.Factor{
	Name:    FCPUManager,
	Default: LevelAny,
	Doc: "the kubelet's CPU manager policy on the nodes the cell's pods run on: any (the default: whatever the cluster runs), none, or static " +
		"(a Guaranteed pod's container with whole CPUs gets cores of its own: qos guaranteed, cpus 1) — a node says its policy by its label " + LabelCPUManager +
		" (the test cluster's nodes do: scripts/k8s.sh up --cpu-manager none,static)",
	Check: anyCase(LevelAny, "none", "static"),
}

// matching are the nodes of nodes whose labels the cell's levels of the
// node factors (options) ask for, in their order; want says which
// ("label=value, …").
func matching(nodes []kube.Node, options map[string]string) (out []kube.Node, want string) {
	asked := map[string]string{}
	var said []string
	for _, f := range slices.Sorted(maps.Keys(nodeFactors)) {
		if v := options[f]; v != "" && v != LevelAny {
			asked[nodeFactors[f]] = v
			said = append(said, nodeFactors[f]+"="+v)
		}
	}
	for _, n := range nodes {
		if carries(n, asked) {
			out = append(out, n)
		}
	}
	return out, strings.Join(said, ", ")
}

// carries reports whether node n has every label of labels, of its value.
func carries(n kube.Node, labels map[string]string) bool {
	for k, v := range labels {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

// checkSpans refuses, before the campaign starts, what its cells ask of
// the nodes that fewer Ready nodes can give: a level of a node factor too
// few nodes carry.
func checkSpans(nodes []kube.Node, spans []platform.Span, host string) error {
	for _, sp := range spans {
		got, want := matching(nodes, sp.Options)
		if want != "" && len(got) < sp.Hosts {
			return fmt.Errorf("kubernetes: a cell places its pods on nodes labelled %s, and the cluster at %s has %d Ready (the cell asks for %d): label nodes that run it (kubectl label node NODE %s), or, on the test cluster, scripts/k8s.sh up --nodes N with --proxy-mode and --cni lists (docs/kubernetes.md)",
				want, host, len(got), sp.Hosts, strings.ReplaceAll(want, ", ", " "))
		}
	}
	return nil
}

// describeNodes is what the nodes' labels of the node factors say of the
// cluster, for the campaign's record: each factor's values over every
// Ready node ("iptables,nftables").
func describeNodes(nodes []kube.Node) map[string]string {
	out := map[string]string{}
	for f, label := range nodeFactors {
		var vals []string
		for _, n := range nodes {
			if v := n.Labels[label]; v != "" && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			slices.Sort(vals)
			out["kubernetes."+f] = strings.Join(vals, ",")
		}
	}
	return out
}
