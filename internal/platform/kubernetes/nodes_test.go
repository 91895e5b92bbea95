package kubernetes

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// nodesOf are Ready nodes named n1… with the kube-proxy mode and CNI
// labels given ("" for none).
func nodesOf(labels ...[2]string) []kube.Node {
	var out []kube.Node
	for i, l := range labels {
		n := kube.Node{Name: "n" + string(rune('1'+i)), Ready: true, Labels: map[string]string{}}
		if l[0] != "" {
			n.Labels[LabelKubeProxy] = l[0]
		}
		if l[1] != "" {
			n.Labels[LabelCNI] = l[1]
		}
		out = append(out, n)
	}
	return out
}

// TestNodeFactors: kube_proxy and cni pick the nodes whose labels say so,
// in their order; any (or no level) keeps every node; a level too few
// nodes carry is refused before the campaign starts, saying how to label
// or bring up nodes; the record lists each factor's values.
func TestNodeFactors(t *testing.T) {
	nodes := nodesOf([2]string{"iptables", "bridge"}, [2]string{"iptables", "bridge"}, [2]string{"nftables", "bridge"}, [2]string{"iptables", "ptp"}, [2]string{"", ""})
	names := func(ns []kube.Node) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.Name)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		options map[string]string
		want    string
	}{
		{nil, "n1,n2,n3,n4,n5"},
		{map[string]string{FKubeProxy: LevelAny, FCNI: LevelAny}, "n1,n2,n3,n4,n5"},
		{map[string]string{FKubeProxy: "nftables"}, "n3"},
		{map[string]string{FCNI: "ptp"}, "n4"},
		{map[string]string{FKubeProxy: "iptables", FCNI: "bridge"}, "n1,n2"},
		{map[string]string{FKubeProxy: "nftables", FCNI: "ptp"}, ""},
	} {
		if got, _ := matching(nodes, c.options); names(got) != c.want {
			t.Errorf("matching(%v) = %s, want %s", c.options, names(got), c.want)
		}
	}
	spans := []platform.Span{
		{Options: map[string]string{FKubeProxy: "iptables", FCNI: "bridge"}, Hosts: 2},
		{Options: map[string]string{FKubeProxy: "nftables", FCNI: LevelAny}, Hosts: 1},
		{Options: map[string]string{FCNI: "ptp"}, Hosts: 1},
		{Options: map[string]string{FKubeProxy: LevelAny}, Hosts: 5},
	}
	if err := checkSpans(nodes, spans, "api"); err != nil {
		t.Errorf("as many nodes as the cells ask: %v", err)
	}
	for _, sp := range []platform.Span{
		{Options: map[string]string{FKubeProxy: "nftables"}, Hosts: 2},
		{Options: map[string]string{FKubeProxy: "nftables", FCNI: "ptp"}, Hosts: 1},
	} {
		err := checkSpans(nodes, append(spans, sp), "api")
		if err == nil || !strings.Contains(err.Error(), "a cell places its pods on nodes labelled ") || !strings.Contains(err.Error(), "ctrbench.io/kube-proxy=nftables") ||
			!strings.Contains(err.Error(), "kubectl label node NODE ctrbench.io/") {
			t.Errorf("%v asked of too few: %v", sp, err)
		}
	}
	got := describeNodes(nodes)
	if got["kubernetes.kube_proxy"] != "iptables,nftables" || got["kubernetes.cni"] != "bridge,ptp" {
		t.Errorf("described %v", got)
	}
	for _, c := range []struct {
		f   platform.Factor
		bad string
	}{{kubeProxyFactor, "ipvs2"}, {cniFactor, "Bad Name"}} {
		if _, err := c.f.Check(c.bad); err == nil {
			t.Errorf("%s accepted %q", c.f.Name, c.bad)
		}
	}
	if v, err := kubeProxyFactor.Check("NFTables"); err != nil || v != "nftables" {
		t.Errorf("kube_proxy NFTables: %q %v", v, err)
	}
}
