package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Placement factors. Each may be qualified by a role ("server.platform",
// "client.network") to place one side of a client/server workload apart
// from the other; the unqualified factor applies to every role.
const (
	FPlatform = "platform"
	FNetwork  = "network"
	FCPUs     = "cpus"
	FCpuset   = "cpuset"
	FMemory   = "memory"
	FStorage  = "storage"
	// Block I/O limits: a proportional weight (10..1000, where the kernel
	// supports it) and throttles in bytes per second on the data's disk.
	FBlkioWeight = "blkio_weight"
	FReadBps     = "read_bps"
	FWriteBps    = "write_bps"
	// FAntagonist names the neighbours that run beside the measured
	// workload (the target): none, idle, a workload of the file, or several
	// joined by "+". FPackaging says how they are packaged with it.
	FAntagonist = "antagonist"
	FPackaging  = "packaging"
	// FHosts is the number of emulated hosts (network namespaces joined by
	// an underlay link); FHost places a role on one of them (1-based);
	// FUnderlay rate-limits the underlay ("none" or a tc rate, "1gbit").
	FHosts    = "hosts"
	FHost     = "host"
	FUnderlay = "underlay"
	// FNode places a role on a named node of a cluster platform: its
	// hostname, or "key=value" for a node carrying that label.
	FNode = "node"
	// FPairs runs that many client/server chains of the workload at once
	// (S4: up to 50 pairs on one node).
	FPairs = "pairs"
	// FInstances runs that many copies of a single-role workload at once,
	// each in its own hosting entity, started at one agreed instant (S1
	// Exp 1: 1 to 64 sysbench instances).
	FInstances = "instances"
	// FPinning places each instance of a cell on cores (vocab.Pinning):
	// S4's CPU pinning.
	FPinning = "pinning"
	// MaxHosts, MaxPairs and MaxInstances bound those factors.
	MaxHosts     = 16
	MaxPairs     = 100
	MaxInstances = 256
	// ParamPrefix makes a workload parameter a factor: "param.message_size".
	ParamPrefix = "param."
	// NoLimit is the level meaning "no cgroup limit" for cpus, cpuset, memory.
	NoLimit = "none"
)

// nodeRE is a node's hostname or a node label key=value.
var nodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(=[A-Za-z0-9._-]*)?$`)

// DefaultPlatform is where a role runs when no platform factor says:
// host processes, the bare-metal reference.
const DefaultPlatform = "native"

var (
	placementFactors = []string{FPlatform, FNetwork, FCPUs, FCpuset, FMemory, FStorage, FBlkioWeight, FReadBps, FWriteBps, FHost, FNode}
	// Placement defaults when a factor is absent from the file.
	placementDefaults = map[string]string{FPlatform: DefaultPlatform, FNetwork: string(vocab.Host), FCPUs: NoLimit, FCpuset: NoLimit, FMemory: NoLimit, FStorage: string(vocab.Layer), FBlkioWeight: NoLimit, FReadBps: NoLimit, FWriteBps: NoLimit, FHost: "", FNode: ""}
)

// Machine is what validation knows of the host, to reject limits it cannot
// honour (a cpuset outside the machine, more cores than exist).
type Machine struct {
	CPUs     int
	MemBytes int64
	// NoBlkioWeight is true where the kernel has no proportional block I/O
	// weight (no blkio.weight / blkio.bfq.weight): blkio_weight is refused.
	NoBlkioWeight bool
}

// splitFactor returns the role qualifier ("" if none) and the base name.
func splitFactor(name string) (role, base string) {
	if strings.HasPrefix(name, ParamPrefix) {
		return "", name
	}
	for _, r := range append(workload.RoleNames(), RoleAntagonist) {
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
	names = append(names, FAntagonist, FPackaging, FHosts, FUnderlay, FPairs, FInstances, FPinning)
	seen := map[string]bool{}
	for _, d := range platform.Drivers() {
		for _, f := range d.Caps.Factors {
			if !seen[f.Name] {
				seen[f.Name] = true
				names = append(names, f.Name+" ("+strings.Join(platform.Declarers(f.Name), ", ")+")")
			}
		}
	}
	names = append(names, RoleAntagonist+".<placement>", ParamPrefix+"<parameter>")
	return strings.Join(names, ", ")
}

// checkFactorName returns an error when name is not a known factor.
func checkFactorName(name string, wls []Workload) error {
	if strings.HasPrefix(name, ParamPrefix) {
		p := strings.TrimPrefix(name, ParamPrefix)
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
	case FAntagonist, FPackaging, FHosts, FUnderlay, FPairs, FInstances, FPinning:
		return nil
	}
	if _, _, ok := platform.FactorOf(name); ok {
		return nil
	}
	role, base := splitFactor(name)
	for _, f := range placementFactors {
		if base == f {
			if role != "" && role != RoleAntagonist && !anyHasRole(wls, role) {
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

// checkLevel validates one level of a factor and returns its canonical form.
func checkLevel(name, level string, wls []Workload, m Machine) (string, error) {
	if strings.HasPrefix(name, ParamPrefix) {
		p := strings.TrimPrefix(name, ParamPrefix)
		for _, w := range wls {
			if w.Spec == nil {
				continue
			}
			if prm, ok := w.Spec.Param(p); ok {
				if _, err := prm.Normalize(level); err != nil {
					return "", fmt.Errorf("level of %s: %v", name, err)
				}
			}
		}
		// Levels of a parameter factor keep the user's spelling, which reads
		// better in reports ("64KiB" rather than "65536").
		return level, nil
	}
	if d, f, ok := platform.FactorOf(name); ok {
		v, err := f.Check(level)
		if err != nil {
			return "", fmt.Errorf("level %q of %s (platform %s): %v", level, name, d.Name, err)
		}
		return v, nil
	}
	switch name {
	case FHosts, FPairs, FInstances:
		max := map[string]int{FHosts: MaxHosts, FPairs: MaxPairs, FInstances: MaxInstances}[name]
		n, err := strconv.Atoi(level)
		if err != nil || n < 1 || n > max {
			return "", fmt.Errorf("level %q of %s: want a whole number from 1 to %d", level, name, max)
		}
		return strconv.Itoa(n), nil
	case FUnderlay:
		if level == NoLimit || rateRE.MatchString(level) {
			return level, nil
		}
		return "", fmt.Errorf("level %q of %s: want %s or a rate such as 100mbit or 1gbit (tc's units: kbit, mbit, gbit)", level, name, NoLimit)
	case FPackaging:
		return level, oneOf(name, level, Packagings)
	case FPinning:
		return level, oneOf(name, level, vocab.Strings(vocab.Pinnings))
	case FAntagonist:
		if level == AntagonistNone || level == AntagonistIdle {
			return level, nil
		}
		for _, a := range Antagonists(level) {
			found := false
			for _, w := range wls {
				found = found || w.Name == a
			}
			if !found {
				names := []string{AntagonistNone, AntagonistIdle}
				for _, w := range wls {
					names = append(names, w.Name)
				}
				return "", fmt.Errorf("level %q of %s: %q is not a workload of this file; allowed: %s, or several joined by +", level, name, a, strings.Join(names, ", "))
			}
		}
		return level, nil
	}
	_, base := splitFactor(name)
	switch base {
	case FPlatform:
		return level, oneOf(name, level, platform.Names())
	case FNetwork:
		return level, oneOf(name, level, vocab.Strings(vocab.Networks))
	case FCPUs:
		if level == NoLimit {
			return level, nil
		}
		f, err := strconv.ParseFloat(level, 64)
		if err != nil || f <= 0 {
			return "", fmt.Errorf("level %q of %s: want %s or a positive number of cores such as 0.5 or 1", level, name, NoLimit)
		}
		if m.CPUs > 0 && f > float64(m.CPUs) {
			return "", fmt.Errorf("level %q of %s: this machine has only %d cores", level, name, m.CPUs)
		}
		return level, nil
	case FCpuset:
		if level == NoLimit {
			return level, nil
		}
		if _, err := ParseCPUList(level, m.CPUs); err != nil {
			return "", fmt.Errorf("level %q of %s: %v", level, name, err)
		}
		return level, nil
	case FStorage:
		return level, oneOf(name, level, vocab.Strings(vocab.Storages))
	case FHost:
		n, err := strconv.Atoi(level)
		if err != nil || n < 1 || n > MaxHosts {
			return "", fmt.Errorf("level %q of %s: want an emulated host's number, 1 to %d (within the cell's hosts)", level, name, MaxHosts)
		}
		return strconv.Itoa(n), nil
	case FNode:
		if !nodeRE.MatchString(level) {
			return "", fmt.Errorf("level %q of %s: want a cluster node's hostname, or key=value for a node carrying that label (letters, digits, '.', '_', '-')", level, name)
		}
		return level, nil
	case FBlkioWeight:
		if level == NoLimit {
			return level, nil
		}
		w, err := strconv.Atoi(level)
		if err != nil || w < 10 || w > 1000 {
			return "", fmt.Errorf("level %q of %s: want %s or a weight from 10 to 1000", level, name, NoLimit)
		}
		if m.NoBlkioWeight {
			return "", fmt.Errorf("level %q of %s: this kernel has no proportional block I/O weight (no blkio.weight or blkio.bfq.weight: its I/O scheduler does not do cgroup weights); allowed here: %s; %s and %s (throttles) work", level, name, NoLimit, FReadBps, FWriteBps)
		}
		return level, nil
	case FReadBps, FWriteBps:
		if level == NoLimit {
			return level, nil
		}
		n, err := workload.ParseSize(level)
		if err != nil || n < 1<<20 {
			return "", fmt.Errorf("level %q of %s: want %s or bytes per second of at least 1MiB, such as 50MiB", level, name, NoLimit)
		}
		return level, nil
	case FMemory:
		if level == NoLimit {
			return level, nil
		}
		n, err := workload.ParseSize(level)
		if err != nil {
			return "", fmt.Errorf("level %q of %s: want %s or a size such as 512MiB or 2GiB", level, name, NoLimit)
		}
		// Docker refuses less than 6 MiB; an agent needs more than that anyway.
		if n < 6<<20 {
			return "", fmt.Errorf("level %q of %s: at least 6MiB", level, name)
		}
		if m.MemBytes > 0 && n > m.MemBytes {
			return "", fmt.Errorf("level %q of %s: larger than this machine's memory (%s)", level, name, workload.FormatSize(m.MemBytes))
		}
		return level, nil
	}
	return "", fmt.Errorf("unknown factor %q", name)
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

func oneOf(name, level string, allowed []string) error {
	for _, a := range allowed {
		if a == level {
			return nil
		}
	}
	return fmt.Errorf("level %q of %s: allowed: %s", level, name, strings.Join(allowed, ", "))
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

// Antagonist and packaging levels.
const (
	AntagonistNone = "none" // the target alone: S0's Case 1, the baseline of every IR
	AntagonistIdle = "idle" // a neighbour that sleeps: the A/A check of the instrument
	PackSame       = "same-container"
	PackSeparate   = "separate-containers"
	// RoleAntagonist qualifies placement factors for the neighbours:
	// antagonist.cpuset: ["1"] pins them away from the target.
	RoleAntagonist = "antagonist"
)

// Packagings are the levels of the packaging factor.
var Packagings = []string{PackSame, PackSeparate}

// Antagonists splits an antagonist level into workload names; nil for
// none and idle.
func Antagonists(level string) []string {
	if level == "" || level == AntagonistNone || level == AntagonistIdle {
		return nil
	}
	return strings.Split(level, "+")
}

// rateRE is a tc rate: a number and a bit unit.
var rateRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit|tbit)$`)

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
	// Host is the emulated host ("1", "2"…); "" when the cell does not
	// say, and the role goes where HostOf spreads it.
	Host string
	// Node names a cluster node ("" when the cell does not).
	Node string
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
	return Placement{Platform: get(FPlatform), Network: vocab.Network(get(FNetwork)), CPUs: get(FCPUs), Cpuset: get(FCpuset), Memory: get(FMemory), Storage: vocab.Storage(get(FStorage)),
		BlkioWeight: get(FBlkioWeight), ReadBps: get(FReadBps), WriteBps: get(FWriteBps), Host: get(FHost), Node: get(FNode)}
}

// Hosts is a cell's number of emulated hosts: 1 (the machine itself, no
// emulated hosts) unless the hosts factor says more.
func Hosts(factors map[string]string) int {
	n, err := strconv.Atoi(factors[FHosts])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Pairs is a cell's number of concurrent client/server chains (default 1).
func Pairs(factors map[string]string) int {
	n, err := strconv.Atoi(factors[FPairs])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Instances is a cell's number of concurrent copies of a single-role
// workload (default 1).
func Instances(factors map[string]string) int {
	n, err := strconv.Atoi(factors[FInstances])
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
