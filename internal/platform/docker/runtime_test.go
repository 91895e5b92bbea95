package docker

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// TestRuntimeFactor: a container gets the runtime its cell names; a
// runtime the engine does not know is refused naming those it knows; one
// the engine knows but that cannot start a container here is refused with
// the engine's reason, and its probe container is gone.
func TestRuntimeFactor(t *testing.T) {
	p, campaign := newCampaign(t)
	ctx := context.Background()
	inst := start(t, p, platform.InstanceSpec{Options: map[string]string{FactorRuntime: DefaultRuntime}})
	if hc := inspect(t, inst).HostConfig; hc.Runtime != DefaultRuntime {
		t.Errorf("the container runs with %q, want %s", hc.Runtime, DefaultRuntime)
	}
	setup := platform.Setup{CampaignID: campaign, Tools: testTools}
	setup.Options = map[string][]string{FactorRuntime: {DefaultRuntime, "no-such-runtime"}}
	err := p.Prepare(ctx, setup)
	if err == nil || !strings.Contains(err.Error(), "the engine does not know it; it knows") || !strings.Contains(err.Error(), DefaultRuntime) {
		t.Errorf("an unknown runtime: %v", err)
	}
	if !strings.Contains(p.camp.daemon.Versions["docker.runtimes"], "crun") {
		t.Skip("the engine has no crun registered (make setup registers it)")
	}
	setup.Options = map[string][]string{FactorRuntime: {"crun"}}
	err = p.Prepare(ctx, setup)
	hybrid := false
	if b, rerr := os.ReadFile("/proc/self/cgroup"); rerr == nil {
		// v1 controllers (lines not starting "0::") beside a v2 hierarchy.
		hybrid = strings.Contains(string(b), "\n0::") && strings.Count(string(b), "\n") > 1
	}
	switch {
	case hybrid && (err == nil || !strings.Contains(err.Error(), "runtime crun cannot start a container here")):
		t.Errorf("crun on a hybrid-cgroup host: want the engine's refusal, got %v", err)
	case !hybrid && err != nil:
		t.Errorf("crun: %v", err)
	}
	rep, lerr := engine.Leftovers(ctx, campaign)
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, c := range rep.Containers {
		if strings.Contains(c, "-probe-") {
			t.Errorf("the probe container %s is left", c)
		}
	}
}
