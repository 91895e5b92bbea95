package spec

import (
	"fmt"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// CPUs are the CPUs the campaign may use, which pinning places instances
// on: the emulated machine's cpuset (machine.cpuset), else the machine's
// ncpu CPUs.
func (e *Experiment) CPUs(ncpu int) []int {
	if e.Envelope.Cpuset != "" {
		if cpus, err := parseCPUList(e.Envelope.Cpuset, 0); err == nil {
			return cpus
		}
	}
	cpus := make([]int, ncpu)
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// VariesMachine reports whether cells set the emulated machine's quota
// themselves (machine.cpus), so its cgroup exists even without a
// machine mapping and each trial sets it.
func (e *Experiment) VariesMachine() bool {
	for _, f := range e.Factors {
		if f.Name == vocab.FMachineCPUs {
			return true
		}
		for _, set := range f.Bundle {
			if _, ok := set[vocab.FMachineCPUs]; ok {
				return true
			}
		}
	}
	return false
}

// pinningProblem says why a cell's levels cannot be pinned as they ask,
// "" when they can; ncpu is how many CPUs the campaign may use (0:
// unknown).
func pinningProblem(lv Levels, roles []string, ncpu int) string {
	pin := lv.Pinning
	if pin == vocab.PinNone {
		return ""
	}
	for _, role := range roles {
		pl := lv.Placement(role)
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
