package agent

import (
	"os"
	"testing"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/result"
)

// A trial's target reports the machine's softirqs and interrupts as
// telemetry (counts, lower); a neighbour's loop reads none of them.
func TestTargetReportsMachineCounters(t *testing.T) {
	if (&Options{}).scope(false).Machine || !(&Options{}).scope(true).Machine {
		t.Fatal("only the target's scope reads the machine")
	}
	if _, err := os.Stat("/proc/softirqs"); err != nil {
		t.Skip("no /proc/softirqs")
	}
	evs := runAgent(t, Options{Agent: invocation.Agent{Workload: "cpu.primes", Role: "main", Params: `{"duration":"100ms","max_prime":"1000"}`}})
	got := map[string]result.Observation{}
	for _, ob := range evs[len(evs)-1].Result.Observations {
		if ob.Kind == result.KindTelemetry {
			got[ob.Metric] = ob
		}
	}
	for _, m := range []string{"softirq_net_rx", "softirq_net_tx", "softirq_net", "softirq_net_rx_max_cpu", "interrupts"} {
		ob, ok := got[m]
		if !ok || ob.Unit != "count" || ob.Better != result.Lower || ob.Value < 0 {
			t.Errorf("%s: %+v (present %v)", m, ob, ok)
		}
	}
}
