package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// nodeRE is a node's hostname or a node label key=value.
var nodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(=[A-Za-z0-9._-]*)?$`)

var (
	placementFactors = []string{vocab.FPlatform, vocab.FNetwork, vocab.FCPUs, vocab.FCpuset, vocab.FMemory, vocab.FStorage, vocab.FBlkioWeight, vocab.FReadBps, vocab.FWriteBps, vocab.FPids, vocab.FHost, vocab.FNode}
	// Placement defaults when a factor is absent from the file.
	placementDefaults = map[string]string{vocab.FPlatform: vocab.DefaultPlatform, vocab.FNetwork: string(vocab.Host), vocab.FCPUs: vocab.NoLimit, vocab.FCpuset: vocab.NoLimit, vocab.FMemory: vocab.NoLimit, vocab.FStorage: string(vocab.Layer), vocab.FBlkioWeight: vocab.NoLimit, vocab.FReadBps: vocab.NoLimit, vocab.FWriteBps: vocab.NoLimit, vocab.FPids: vocab.NoLimit, vocab.FHost: "", vocab.FNode: ""}
)

// Machine is what validation knows of the host, to reject limits it cannot
// honour (a cpuset outside the machine, more cores than exist).
type Machine struct {
	CPUs     int
	MemBytes int64
	// NoBlkioWeight is true where the kernel has no proportional block I/O
	// weight (no blkio.weight / blkio.bfq.weight): blkio_weight is refused.
	NoBlkioWeight bool
	// Image, when set, looks a user's image (an image: parameter) up in
	// the engine it will be taken from: nil when it is there, an error
	// wrapping ErrImageUnchecked when the engine cannot be asked (the
	// check is then deferred to the platform's preparation, and a note
	// says so), any other error when it is not there. Nil: not looked up.
	Image func(ref string) error
}

// ErrImageUnchecked is what a Machine.Image lookup wraps when it could not
// ask the engine.
var ErrImageUnchecked = errors.New("the engine could not be asked")

// splitFactor returns the role qualifier ("" if none) and the base name.
func splitFactor(name string) (role, base string) {
	if strings.HasPrefix(name, vocab.ParamPrefix) {
		return "", name
	}
	for _, r := range append(workload.RoleNames(), vocab.RoleNeighbour) {
		if strings.HasPrefix(name, r+".") {
			return r, strings.TrimPrefix(name, r+".")
		}
	}
	return "", name
}

// knownFactorNames describes the allowed factor names for error messages.
func knownFactorNames() string {
	names := append([]string{}, placementFactors...)
	names = append(names, "<role>.<"+strings.Join(placementFactors, "|")+"> (roles: "+strings.Join(workload.RoleNames(), ", ")+")")
	names = append(names, vocab.FNeighbour, vocab.FPackaging, vocab.FHosts, vocab.FUnderlay, vocab.FPairs, vocab.FInstances, vocab.FPinning, vocab.FMachineCPUs)
	seen := map[string]bool{}
	for _, d := range platform.Drivers() {
		for _, f := range d.Caps.Own.Factors {
			if !seen[f.Name] {
				seen[f.Name] = true
				names = append(names, f.Name+" ("+strings.Join(platform.Declarers(f.Name), ", ")+")")
			}
		}
	}
	names = append(names, vocab.RoleNeighbour+".<placement>", vocab.ParamPrefix+"<parameter>")
	return strings.Join(names, ", ")
}

// checkFactorName returns an error when name is not a known factor.
func checkFactorName(name string, wls []Workload) error {
	if strings.HasPrefix(name, vocab.ParamPrefix) {
		p := strings.TrimPrefix(name, vocab.ParamPrefix)
		for _, w := range wls {
			if w.Spec != nil {
				if _, ok := w.Spec.Param(p); ok {
					return nil
				}
			}
		}
		return fmt.Errorf("factor %q: no workload of this file has a parameter %q", name, p)
	}
	switch name {
	case vocab.FNeighbour, vocab.FPackaging, vocab.FHosts, vocab.FUnderlay, vocab.FPairs, vocab.FInstances, vocab.FPinning, vocab.FMachineCPUs:
		return nil
	}
	if _, _, ok := platform.FactorOf(name); ok {
		return nil
	}
	role, base := splitFactor(name)
	for _, f := range placementFactors {
		if base == f {
			if role != "" && role != vocab.RoleNeighbour && !anyHasRole(wls, role) {
				return fmt.Errorf("factor %q places the %s role, but no workload of this file has one", name, role)
			}
			return nil
		}
	}
	return fmt.Errorf("unknown factor %q; allowed: %s", name, knownFactorNames())
}

func anyHasRole(wls []Workload, role string) bool {
	for _, w := range wls {
		if w.Spec != nil && w.Spec.HasRole(role) {
			return true
		}
	}
	return false
}

// paramLevelKey is a parameter level's value as every workload with that
// parameter normalises it, so spellings of one value compare equal.
func paramLevelKey(param, level string, wls []Workload) string {
	var vals []string
	for _, w := range wls {
		if w.Spec == nil {
			continue
		}
		if prm, ok := w.Spec.Param(param); ok {
			v, _ := prm.Normalize(level)
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, "\x00")
}

// parseCPUList parses a cpuset list such as "0", "0-1", "0,2-3" and checks
// every CPU is below ncpu (when ncpu > 0).
func parseCPUList(s string, ncpu int) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("want CPU numbers such as 0, 0-1 or 0,2")
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("want CPU numbers such as 0, 0-1 or 0,2")
			}
		}
		// Linux supports at most 8192 CPUs; a larger number is a typo, and
		// expanding it would exhaust memory when the machine is unknown.
		if b >= maxCPUs {
			return nil, fmt.Errorf("CPU %d is beyond any machine (at most %d CPUs)", b, maxCPUs)
		}
		for c := a; c <= b; c++ {
			if ncpu > 0 && c >= ncpu {
				return nil, fmt.Errorf("CPU %d does not exist on this machine (CPUs 0-%d)", c, ncpu-1)
			}
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

const maxCPUs = 8192
