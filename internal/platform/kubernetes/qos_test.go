package kubernetes

import (
	"maps"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// TestResources: each QoS level gives the requests and limits that make a
// pod of its class, from the cell's limits, and refuses the limits that
// cannot give it, saying why.
func TestResources(t *testing.T) {
	both := platform.Limits{CPUs: 0.5, MemoryBytes: 64 << 20}
	cpu := platform.Limits{CPUs: 1.25}
	none := platform.Limits{}
	all := map[string]string{"cpu": "500m", "memory": "67108864"}
	for _, c := range []struct {
		qos      string
		l        platform.Limits
		req, lim map[string]string
		err      string
	}{
		{QoSLimits, both, all, all, ""},
		{QoSLimits, cpu, map[string]string{"cpu": "1250m"}, map[string]string{"cpu": "1250m"}, ""},
		{QoSLimits, none, nil, nil, ""},
		{QoSGuaranteed, both, all, all, ""},
		{QoSGuaranteed, cpu, nil, nil, "needs the cell's cpus and memory both"},
		{QoSBurstable, both, all, nil, ""},
		{QoSBurstable, none, nil, nil, "needs the cell's cpus or memory"},
		{QoSBestEffort, none, nil, nil, ""},
		{QoSBestEffort, cpu, nil, nil, "leave them unset"},
	} {
		req, lim, err := resources(c.l, c.qos)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s with %+v: error %v, want one saying %q", c.qos, c.l, err, c.err)
			}
			continue
		}
		if err != nil || !maps.Equal(req, c.req) || !maps.Equal(lim, c.lim) {
			t.Errorf("%s with %+v: requests %v limits %v (%v), want %v and %v", c.qos, c.l, req, lim, err, c.req, c.lim)
		}
	}
	if v, err := qosFactor.Check("Guaranteed"); v != QoSGuaranteed || err != nil {
		t.Errorf("Check(Guaranteed) = %q, %v", v, err)
	}
	if _, err := qosFactor.Check("gold"); err == nil {
		t.Error("Check(gold) took it")
	}
}
