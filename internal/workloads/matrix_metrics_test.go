package workloads

import (
	"testing"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// A type's matrix metrics (S0's matrices, one each) are metrics it
// declares, each once, its headline first: the first matrix is the one
// the placement advice judges by.
func TestMatrixMetricsDeclared(t *testing.T) {
	for _, typ := range workload.Types() {
		s, _ := workload.Lookup(typ)
		if len(s.MatrixMetrics()) == 0 {
			continue
		}
		if len(s.Metrics) == 0 || s.MatrixMetrics()[0] != s.Metrics[0].Name {
			t.Errorf("%s: matrix metrics %v do not start with the headline", typ, s.MatrixMetrics())
		}
		seen := map[string]bool{}
		for _, name := range s.MatrixMetrics() {
			if _, ok := s.Metric(name); !ok || seen[name] {
				t.Errorf("%s: matrix metric %q undeclared or repeated", typ, name)
			}
			seen[name] = true
		}
	}
	s, _ := workload.Lookup("mem.stream")
	if len(s.MatrixMetrics()) != 4 {
		t.Errorf("mem.stream's matrix metrics %v: want S0's four kernels", s.MatrixMetrics())
	}
}
