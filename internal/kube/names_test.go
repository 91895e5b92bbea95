package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
)

func TestNamespaceName(t *testing.T) {
	long := strings.Repeat("abcdefghij", 8)
	cases := map[string]string{
		"fio-20261129-011500-ab12": "ctb-fio-20261129-011500-ab12", // a ctrbench ID stays as it is
		"campaign":                 "ctb-campaign",
	}
	for in, want := range cases {
		if got := NamespaceName(in); got != want {
			t.Errorf("NamespaceName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"My Campaign", "a_b.c", "", "---", "UPPER", long, long + "x", "ab--" + long, "é"} {
		got := NamespaceName(in)
		if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 {
			t.Errorf("NamespaceName(%q) = %q, not a DNS-1123 label: %v", in, got, msgs)
		}
		if !strings.HasPrefix(got, "ctb-") {
			t.Errorf("NamespaceName(%q) = %q, want the ctb- prefix", in, got)
		}
	}
	// Names that would collide once changed or cut do not.
	for _, pair := range [][2]string{{"A_b", "a-b"}, {"a.b", "a_b"}, {long, long + "x"}} {
		if a, b := NamespaceName(pair[0]), NamespaceName(pair[1]); a == b {
			t.Errorf("NamespaceName(%q) = NamespaceName(%q) = %q", pair[0], pair[1], a)
		}
	}
	if got := NamespaceName("My Campaign"); !strings.HasPrefix(got, "ctb-my-campaign-") {
		t.Errorf("NamespaceName(%q) = %q, want it to read as ctb-my-campaign-<hash>", "My Campaign", got)
	}
}

// TestLabels: ctrbench's labels (owner.Labels, which owner's tests check
// merge as they should), with a caller's, are valid Kubernetes label keys
// and values, as kube puts them on every object.
func TestLabels(t *testing.T) {
	got := owner.Labels("c1", map[string]string{platform.LabelRole: "server", "app": "web2"})
	for k, v := range got {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			t.Errorf("label key %q: %v", k, msgs)
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, msgs)
		}
	}
}

func TestCampaignSelector(t *testing.T) {
	if got, want := campaignSelector(""), "io.ctrbench.managed=true"; got != want {
		t.Errorf("campaignSelector(\"\") = %q, want %q", got, want)
	}
	if got, want := campaignSelector("c1"), "io.ctrbench.managed=true,io.ctrbench.campaign=c1"; got != want {
		t.Errorf("campaignSelector(c1) = %q, want %q", got, want)
	}
}

// TestPodName: the instances of one trial's pairs, whose names differ only
// past the 63rd character, get pods of their own, each a DNS-1123 label;
// a short name stays as it is.
func TestPodName(t *testing.T) {
	base := "ctrbench-e2e-kubernetes-neighbour-20261129-072709-97eb-t2"
	seen := map[string]string{}
	for _, role := range []string{"server1", "server2", "server3", "client1", "client2", "client3"} {
		name := base + "-" + role + "-0a1b2c3d"
		got := PodName(name)
		if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 {
			t.Errorf("PodName(%q) = %q, not a DNS-1123 label: %v", name, got, msgs)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("PodName(%q) = PodName(%q) = %q", name, other, got)
		}
		seen[got] = name
	}
	if got := PodName("ctrbench-x-t1-server-ab"); got != "ctrbench-x-t1-server-ab" {
		t.Errorf("a short name became %q", got)
	}
}
