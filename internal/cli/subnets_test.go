package cli

import (
	"strings"
	"testing"
)

// TestSubnetsShell: the plan scripts/k8s.sh evals names every node's
// address and pods, from the pool asked.
func TestSubnetsShell(t *testing.T) {
	code, out, errOut := run(t, "subnets", "--shell", "--nodes", "2", "--subnet-pool", "10.20.0.0/15")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"K8S_NODE_NET=10.20.240.0/24\n", "K8S_GATEWAY=10.20.240.1\n", "K8S_SERVICE_NET=10.20.241.0/24\n",
		"K8S_POD_NET=10.20.244.0/22\n", "K8S_NODE1_IP=10.20.240.2\n", "K8S_NODE2_PODS=10.20.245.0/24\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if code, _, errOut := run(t, "subnets", "--nodes", "9"); code != 2 || !strings.Contains(errOut, "1 to 4 nodes") {
		t.Errorf("--nodes 9: exit %d, %s", code, errOut)
	}
}
