package kube

import (
	"fmt"
	"github.com/ctrbench/ctrbench/internal/owner"

	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"
)

// smokeImage is on every node of ctrbench's test cluster (scripts/k8s.sh up imports it): FROM scratch,
// /bin/busybox its entrypoint.
const smokeImage = "ctrbench.local/busybox:1"

// The test cluster's nodes (scripts/k8s.sh up).
var testNodes = []string{"ctrbench-node1", "ctrbench-node2"}

// testClient connects to ctrbench's test cluster, or skips the test when
// there is none that answers.
func testClient(t *testing.T) *Client {
	t.Helper()
	const skip = "no ctrbench test cluster: make k8s && scripts/k8s.sh up"
	if _, err := os.Stat(TestKubeconfig); err != nil {
		t.Skip(skip)
	}
	c, err := Connect(TestKubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Version(ctx); err != nil {
		t.Skipf("%s (%v)", skip, err)
	}
	return c
}

// testCampaign is a campaign ID of its own for test t.
func testCampaign(t *testing.T) string {
	b := make([]byte, 3)
	rand.Read(b)
	n := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	if len(n) > 20 {
		n = n[:20]
	}
	return "kubetest-" + strings.Trim(nonLabel.ReplaceAllString(n, "-"), "-") + "-" + hex.EncodeToString(b)
}

// testNamespace makes a campaign's namespace for test t, deleted when it
// ends.
func testNamespace(t *testing.T, c *Client) string {
	t.Helper()
	ns, err := c.EnsureNamespace(context.Background(), testCampaign(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.DeleteNamespace(context.Background(), ns); err != nil {
			t.Error(err)
		}
	})
	return ns
}

// testContext is bounded by the test's deadline and a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestVersionAndNodes(t *testing.T) {
	c := testClient(t)
	ctx := testContext(t)
	v, err := c.Version(ctx)
	if err != nil || v != "v1.34.4" {
		t.Errorf("Version = %q, %v; want v1.34.4", v, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// scripts/k8s-test.sh brings up four; scripts/k8s.sh up two.
	if len(nodes) < len(testNodes) {
		t.Fatalf("Nodes = %+v, want at least %v", nodes, testNodes)
	}
	for i, n := range nodes {
		wantName, wantIP := fmt.Sprintf("ctrbench-node%d", i+1), fmt.Sprintf("198.18.240.%d", 2+i)
		if n.Name != wantName || n.InternalIP != wantIP || !n.Ready || n.CPUMilli <= 0 || n.Memory <= 0 ||
			n.Kubelet != "v1.34.4" || !strings.HasPrefix(n.Runtime, "containerd://") {
			t.Errorf("node %d = %+v, want %s at %s, ready, with CPU, memory, kubelet v1.34.4, containerd", i, n, wantName, wantIP)
		}
	}
}

func TestEnsureNamespace(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	campaign := testCampaign(t)
	ns, err := c.EnsureNamespace(ctx, campaign)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteNamespace(context.Background(), ns) })
	if ns != NamespaceName(campaign) {
		t.Errorf("EnsureNamespace = %s, want %s", ns, NamespaceName(campaign))
	}
	if again, err := c.EnsureNamespace(ctx, campaign); err != nil || again != ns {
		t.Errorf("EnsureNamespace again = %s, %v; want %s", again, err, ns)
	}
	got, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metaGet)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range owner.Labels(campaign) {
		if got.Labels[k] != v {
			t.Errorf("namespace label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if err := c.DeleteNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metaGet); err == nil {
		t.Errorf("namespace %s still there after DeleteNamespace", ns)
	}
}

func TestEnsureNamespaceRefusesBadCampaign(t *testing.T) {
	c := testClient(t)
	for _, campaign := range []string{"", "has space", strings.Repeat("x", 64)} {
		if ns, err := c.EnsureNamespace(testContext(t), campaign); err == nil {
			c.DeleteNamespace(context.Background(), ns)
			t.Errorf("EnsureNamespace(%q) made %s, want an error", campaign, ns)
		}
	}
}
