package swarm

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Where ctrbench builds the swarm, this machine's kernel is the nodes': the
// encrypted overlay needs ESP and the routing mesh IPVS, and a file asking
// for them without is refused with the reason. Naming a user's swarm
// (DOCKER_HOST) leaves the answer to its engine.
func TestRefuseByKernel(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	d, ok := platform.Lookup("swarm")
	if !ok {
		t.Fatal("swarm is not registered")
	}
	for _, c := range []struct {
		n          vocab.Network
		mod, proc  string
		wantReason string
	}{
		{vocab.OverlayEncrypted, "esp4", "", "this kernel has no ESP"},
		{vocab.Ingress, "ip_vs", "/proc/net/ip_vs", "needs IPVS, and this kernel has none"},
	} {
		_, err := d.Provision(c.n, 2)
		if kernelHas(c.mod, c.proc) {
			t.Logf("this kernel has %s", c.mod)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantReason) {
			t.Errorf("network %s on a kernel without %s: %v, want %q", c.n, c.mod, err, c.wantReason)
		}
	}
	for _, n := range []vocab.Network{vocab.Overlay, vocab.Host} {
		for _, hosts := range []int{1, 3, MaxNodes} {
			if p, err := d.Provision(n, hosts); err != nil || p.Platform != n || p.Wire != "" {
				t.Errorf("network %s on %d nodes: %+v, %v", n, hosts, p, err)
			}
		}
	}
	t.Setenv("DOCKER_HOST", "tcp://manager.example:2376")
	if _, err := d.Provision(vocab.OverlayEncrypted, 2); err != nil {
		t.Errorf("on a user's swarm the encrypted overlay is the engine's to refuse: %v", err)
	}
	for _, n := range []vocab.Network{vocab.Bridge, vocab.Macvlan, vocab.Loopback} {
		if _, err := d.Provision(n, 2); err == nil {
			t.Errorf("network %s on the swarm was accepted", n)
		}
	}
}
