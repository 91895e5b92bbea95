package spec

import (
	"fmt"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// PinningOf is a cell's pinning level: none when the cell does not set one.
func PinningOf(factors map[string]string) vocab.Pinning {
	if v := factors[vocab.FPinning]; v != "" {
		return vocab.Pinning(v)
	}
	return vocab.PinNone
}

// CPUs are the CPUs the campaign may use, which pinning places instances
// on: the emulated machine's cpuset (machine.cpuset), else the machine's
// ncpu CPUs.
func (e *Experiment) CPUs(ncpu int) []int {
	if e.Envelope.Cpuset != "" {
		if cpus, err := ParseCPUList(e.Envelope.Cpuset, 0); err == nil {
			return cpus
		}
	}
	cpus := make([]int, ncpu)
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// pinningProblem says why cell factors cannot be pinned as they ask, ""
// when they can; ncpu is how many CPUs the campaign may use (0: unknown).
func pinningProblem(factors map[string]string, roles []string, ncpu int) string {
	pin := PinningOf(factors)
	if pin == vocab.PinNone {
		return ""
	}
	for _, role := range roles {
		pl := PlacementFor(factors, role)
		if pl.Cpuset != "" && pl.Cpuset != vocab.NoLimit {
			return fmt.Sprintf("pinning %s places every instance on cores itself: it does not combine with cpuset %s (%s)", pin, pl.Cpuset, role)
		}
		if d, ok := platform.Lookup(pl.Platform); ok && !d.Caps.Limits {
			return fmt.Sprintf("pinning %s needs a platform that applies limits; %s runs on %s, which does not", pin, role, pl.Platform)
		}
	}
	if pin == vocab.PinSeparate {
		chain := 0
		for _, r := range roles {
			if r != vocab.RoleNeighbour {
				chain++
			}
		}
		switch {
		case chain < 2:
			return fmt.Sprintf("pinning %s puts a pair's roles on different cores, but the workload has a single role: use spread", pin)
		case ncpu == 1:
			return fmt.Sprintf("pinning %s needs two cores or more; the campaign may use one", pin)
		}
	}
	return ""
}
