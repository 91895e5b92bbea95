package kubernetes_test

import (
	"context"
	"testing"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/kubernetes"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestQoSClasses: each level of the qos factor gives the pod the class
// the API then reports for it, and the agent inside sees the limits of
// that class: a CPU quota under guaranteed, none under burstable and
// besteffort.
func TestQoSClasses(t *testing.T) {
	testCluster(t)
	ctx := context.Background()
	p, campaign, labels := prepared(t, "test-k8s-qos", 1)
	key := result.NewKey()
	limited := platform.Limits{CPUs: 0.5, MemoryBytes: 64 << 20}
	for _, c := range []struct {
		qos, class, cpus string
		limits           platform.Limits
	}{
		{kubernetes.QoSGuaranteed, "Guaranteed", "0.5", limited},
		{kubernetes.QoSBurstable, "Burstable", "", limited},
		{kubernetes.QoSBestEffort, "BestEffort", "", platform.Limits{}},
	} {
		t.Run(c.qos, func(t *testing.T) {
			inv := invocation.Agent{Kind: invocation.Run, Workload: "cpu.primes", Params: `{"duration":"100ms","max_prime":"1000"}`, Key: key}
			in, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-" + c.qos, Agent: inv, Network: vocab.Pod, Host: 1,
				Labels: labels, Limits: c.limits, Options: map[string]string{kubernetes.FQoS: c.qos}})
			if err != nil {
				t.Fatal(err)
			}
			defer in.Remove(ctx)
			if got := in.(platform.Seer).Seen()["kubernetes.qos_class"]; got != c.class {
				t.Errorf("qos %s: the API says class %q, want %s", c.qos, got, c.class)
			}
			res := platformtest.ReadResult(t, in, key)
			if res == nil || res.Status != result.OK {
				t.Fatalf("qos %s: %+v", c.qos, res)
			}
			if res.Seen["cgroup.cpus"] != c.cpus {
				t.Errorf("qos %s: the agent saw a CPU quota of %q cores, want %q", c.qos, res.Seen["cgroup.cpus"], c.cpus)
			}
		})
	}
}
