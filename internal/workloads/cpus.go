package workloads

import (
	"fmt"
	"math"
	"runtime"

	"github.com/ctrbench/ctrbench/internal/cgroup"
)

// instanceCPUsDoc says, for a thread count's parameter, what
// instanceCPUs resolves.
const instanceCPUsDoc = "every CPU the instance may use: its affinity mask (cpuset) capped by its own cgroup's CPU quota rounded up"

// instanceCPUs is every CPU an instance may use: those of its affinity
// mask (runtime.NumCPU, which a cpuset limits), at most its own cgroup's
// CFS quota rounded up (a quota of 1.5 CPUs: 2; 0.5: 1), at least one. A
// quota on an enclosing group (the emulated machine's, a nested parent's)
// is not seen from inside a container's cgroup namespace.
func instanceCPUs(ncpu int, quota float64) int {
	n := ncpu
	if quota > 0 && math.Ceil(quota) < float64(n) {
		n = int(math.Ceil(quota))
	}
	return max(n, 1)
}

// cpusNow is what this process may use: the CPUs of its affinity mask and
// its cgroup's CPU quota (0: none).
func cpusNow() (ncpu int, quota float64) { return runtime.NumCPU(), cgroup.Self().CPUs }

// threadsSeen says how a thread count was resolved, for the trial's
// record: "2 (asked auto; CPUs in the affinity mask 2; cgroup CPU quota
// none)".
func threadsSeen(threads int, asked string, ncpu int, quota float64) string {
	q := "none"
	if quota > 0 {
		q = fmt.Sprintf("%g CPUs", quota)
	}
	return fmt.Sprintf("%d (asked %s; CPUs in the affinity mask %d; cgroup CPU quota %s)", threads, asked, ncpu, q)
}
