package hostbridge

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/subnets"
)

// Two campaigns' bridges of one kind at once: the second takes a spare
// /24, even when both are made at the same moment, and the machine never
// has one subnet on two bridges.
func TestTwoBridgesTakeTwoSubnets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making bridges needs root")
	}
	names := []string{"ctbtesthbA", "ctbtesthbB", "ctbtesthbC"}
	t.Cleanup(func() {
		for _, n := range names {
			_ = links.Remove(n)
		}
	})
	bridges := make([]*Bridge, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bridges[i], errs[i] = Make(n, subnets.Default(), subnets.VMBridge)
		}()
	}
	wg.Wait()
	seen := map[string]string{}
	for i, b := range bridges {
		if errs[i] != nil {
			t.Fatalf("%s: %v", names[i], errs[i])
		}
		if other, dup := seen[b.Subnet()]; dup {
			t.Errorf("%s and %s both on %s", other, b.Name, b.Subnet())
		}
		seen[b.Subnet()] = b.Name
		if !strings.HasPrefix(b.Subnet(), "198.18.") || b.Gateway() != strings.TrimSuffix(b.Subnet(), "0/24")+"1" || b.Broadcast() != strings.TrimSuffix(b.Subnet(), "0/24")+"255" {
			t.Errorf("%s: subnet %s, gateway %s", b.Name, b.Subnet(), b.Gateway())
		}
	}
	for _, b := range bridges {
		if err := b.Remove(); err != nil {
			t.Error(err)
		}
	}
}
