package agent

import (
	"fmt"
	"sync"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// histograms collects what a role hands the agent through
// workload.Env.Histogram, from whichever goroutine.
type histograms struct {
	mu  sync.Mutex
	all []result.Histogram
}

func (h *histograms) add(x result.Histogram) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all = append(h.all, x)
}

// declared returns the histograms, each of which the workload must declare
// with its unit (the runner and reports read percentiles from them by
// that declaration) and return once.
func (h *histograms) declared(spec *workload.Spec) ([]result.Histogram, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for _, x := range h.all {
		d, ok := spec.Histogram(x.Metric)
		switch {
		case !ok || d.Unit != x.Unit:
			return nil, fmt.Errorf("returned a histogram of %s in %s, which it does not declare", x.Metric, x.Unit)
		case seen[x.Metric]:
			return nil, fmt.Errorf("returned histogram %s twice", x.Metric)
		}
		seen[x.Metric] = true
	}
	return h.all, nil
}
