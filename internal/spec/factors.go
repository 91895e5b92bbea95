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

// ParseCPUList parses a cpuset list such as "0", "0-1", "0,2-3" and checks
// every CPU is below ncpu (when ncpu > 0).
func ParseCPUList(s string, ncpu int) ([]int, error) {
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

// Placement is where one role of a cell runs.
type Placement struct {
	Platform string
	Network  vocab.Network
	CPUs     string // level text: "none" or cores
	Cpuset   string
	Memory   string
	Storage  vocab.Storage
	// BlkioWeight, ReadBps, WriteBps: "none" or the level's text.
	BlkioWeight, ReadBps, WriteBps string
	// Pids: "none" or the most processes.
	Pids string
	// Host is the emulated host ("1", "2"…); "" when the cell does not
	// say, and the role goes where HostOf spreads it.
	Host string
	// Node names a cluster node ("" when the cell does not).
	Node string
}

// Limits are the placement's limit levels as the platform's limits,
// parsed here once (the levels were checked when the file was read).
func (pl Placement) Limits() (platform.Limits, error) {
	var l platform.Limits
	if pl.CPUs != vocab.NoLimit && pl.CPUs != "" {
		f, err := strconv.ParseFloat(pl.CPUs, 64)
		if err != nil {
			return l, fmt.Errorf("cpus %q: %w", pl.CPUs, err)
		}
		l.CPUs = f
	}
	if pl.Cpuset != vocab.NoLimit {
		l.Cpuset = pl.Cpuset
	}
	if pl.BlkioWeight != vocab.NoLimit && pl.BlkioWeight != "" {
		w, err := strconv.Atoi(pl.BlkioWeight)
		if err != nil {
			return l, fmt.Errorf("blkio_weight %q: %w", pl.BlkioWeight, err)
		}
		l.BlkioWeight = uint16(w)
	}
	for _, bps := range []struct {
		level string
		to    *int64
	}{{pl.ReadBps, &l.ReadBps}, {pl.WriteBps, &l.WriteBps}} {
		if bps.level != vocab.NoLimit && bps.level != "" {
			n, err := vocab.ParseSize(bps.level)
			if err != nil {
				return l, fmt.Errorf("block I/O rate %q: %w", bps.level, err)
			}
			*bps.to = int64(n)
		}
	}
	if pl.Pids != vocab.NoLimit && pl.Pids != "" {
		n, err := strconv.ParseInt(pl.Pids, 10, 64)
		if err != nil {
			return l, fmt.Errorf("pids %q: %w", pl.Pids, err)
		}
		l.Pids = n
	}
	if pl.Memory != vocab.NoLimit && pl.Memory != "" {
		n, err := vocab.ParseSize(pl.Memory)
		if err != nil {
			return l, fmt.Errorf("memory %q: %w", pl.Memory, err)
		}
		l.MemoryBytes = int64(n)
	}
	return l, nil
}

// Underlay is a cell's underlay: its rate, delay, jitter and loss
// (nothing unless the underlay factor names them).
func Underlay(factors map[string]string) (vocab.Underlay, error) {
	return vocab.ParseUnderlay(factors[vocab.FUnderlay])
}

// PlacementFor resolves the placement of a role from a cell's factor levels:
// the role-qualified factor wins over the plain one, which wins over the default.
func PlacementFor(factors map[string]string, role string) Placement {
	get := func(base string) string {
		if v, ok := factors[role+"."+base]; ok {
			return v
		}
		if v, ok := factors[base]; ok {
			return v
		}
		return placementDefaults[base]
	}
	return Placement{Platform: get(vocab.FPlatform), Network: vocab.Network(get(vocab.FNetwork)), CPUs: get(vocab.FCPUs), Cpuset: get(vocab.FCpuset), Memory: get(vocab.FMemory), Storage: vocab.Storage(get(vocab.FStorage)),
		BlkioWeight: get(vocab.FBlkioWeight), ReadBps: get(vocab.FReadBps), WriteBps: get(vocab.FWriteBps), Pids: get(vocab.FPids), Host: get(vocab.FHost), Node: get(vocab.FNode)}
}

// Hosts is a cell's number of emulated hosts: 1 (the machine itself, no
// emulated hosts) unless the hosts factor says more.
func Hosts(factors map[string]string) int {
	n, err := strconv.Atoi(factors[vocab.FHosts])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Pairs is a cell's number of concurrent client/server chains (default 1).
func Pairs(factors map[string]string) int {
	n, err := strconv.Atoi(factors[vocab.FPairs])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Instances is a cell's number of concurrent copies of a single-role
// workload (default 1).
func Instances(factors map[string]string) int {
	n, err := strconv.Atoi(factors[vocab.FInstances])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// HostOf is the emulated host (1-based) a role of a chain runs on when
// hosts > 1: the host factor when the cell has one, else spread along the
// chain — the driver on host 1, its server on host 2, that server's own
// server on host 3, wrapping around — so traffic crosses the underlay.
// roles is the chain, servers first and the driver last.
func HostOf(factors map[string]string, role string, roles []string) int {
	if h, err := strconv.Atoi(PlacementFor(factors, role).Host); err == nil && h > 0 {
		return h
	}
	n := Hosts(factors)
	for i, r := range roles {
		if r == role {
			return (len(roles)-1-i)%n + 1
		}
	}
	return 1
}
