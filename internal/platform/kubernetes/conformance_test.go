package kubernetes_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/kubernetes"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// testCluster points KUBECONFIG at ctrbench's test cluster, or skips the
// test when none is up.
func testCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Kubernetes cluster")
	}
	if _, err := os.Stat(kube.TestKubeconfig); err != nil {
		t.Skip("no ctrbench test cluster: make k8s && scripts/k8s.sh up (make test-k8s does both)")
	}
	t.Setenv("KUBECONFIG", kube.TestKubeconfig)
}

// prepared is the platform opened on the test cluster and prepared for a
// campaign of its own named after name, with hosts nodes; closed when the
// test ends.
func prepared(t *testing.T, name string, hosts int) (p *kubernetes.Platform, campaign string, labels map[string]string) {
	t.Helper()
	campaign, labels = platformtest.NewCampaign(name)
	p, err := kubernetes.Open(context.Background(), platform.Config{Binary: testutil.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: campaign, Labels: labels, Hosts: hosts}); err != nil {
		t.Fatal(err)
	}
	return p, campaign, labels
}

// TestConformance runs the real agent as pods of the test cluster's two
// nodes through the suite every platform must pass, on the pod network
// and the node's host network, with CPU and memory limits. Afterwards the
// campaign's namespace is gone.
func TestConformance(t *testing.T) {
	testCluster(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-k8s")
	p, err := kubernetes.Open(ctx, platform.Config{Binary: testutil.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	nets := []vocab.Network{vocab.Pod, vocab.Host}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		c, err := kube.Connect("", "")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if left, err := c.Clean(ctx, campaign); err != nil || len(left) > 0 {
			t.Errorf("left behind: %v (%v)", left, err)
		}
	})
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Networks: nets, Hosts: 2,
		Storages: []vocab.Storage{vocab.Layer}}); err != nil {
		t.Fatal(err)
	}
	// The cluster in the campaign's record: what the API says and what
	// the test cluster's nodes say of themselves.
	info := p.Info()
	for _, k := range []string{"kubernetes.version", "kubernetes.runtime", "kubernetes.kube_proxy", "kubernetes.cni", "kubernetes.cpu_manager", "kubernetes.nodes_emulated", "kubernetes.node_cpus", "kubernetes.runc", "kubernetes.cni_plugins"} {
		if info[k] == "" {
			t.Errorf("the record has no %s: %v", k, info)
		}
	}
	c, err := kube.Connect("", "")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nodes {
		if n.Ready {
			ready++
		}
	}
	if info["kubernetes.nodes"] != strconv.Itoa(ready) || ready < 2 || !strings.HasPrefix(info["kubernetes.version"], "v1.") {
		t.Errorf("the record says %s nodes, version %s; the API lists %d Ready", info["kubernetes.nodes"], info["kubernetes.version"], ready)
	}
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: nets, Limits: true,
		Storages: map[vocab.Storage]string{vocab.Layer: ""}, Caps: kubernetes.Caps})
}
