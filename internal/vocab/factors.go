package vocab

import "strings"

// The factor vocabulary of experiment files: the names of the factors and
// the facts about their levels that more than the parser needs (reports,
// figures, placement advice, physics checks). spec parses files into these
// words; no other package spells them.

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
	// FPids caps the processes (and threads) an instance may have: its
	// cgroup's pids.max, so a workload that forks without end fails
	// alone instead of taking the machine's process table.
	FPids = "pids"
	// FNeighbour names the neighbours that run beside the measured
	// workload (the target): none, idle, a workload of the file, or several
	// joined by "+". FPackaging says how they are packaged with it.
	FNeighbour = "neighbour"
	FPackaging = "packaging"
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
	// FPinning places each instance of a cell on cores (Pinning):
	// S4's CPU pinning.
	FPinning = "pinning"
	// FMachineCPUs is the emulated machine's CPU quota as a factor (S4's
	// core count): the machine mapping's cpus, cell by cell.
	FMachineCPUs = "machine.cpus"
	// MaxHosts, MaxPairs and MaxInstances bound those factors.
	MaxHosts     = 16
	MaxPairs     = 100
	MaxInstances = 256
	// ParamPrefix makes a workload parameter a factor: "param.message_size".
	ParamPrefix = "param."
	// NoLimit is the level meaning "no cgroup limit" for cpus, cpuset, memory.
	NoLimit = "none"
)

// DefaultPlatform is where a role runs when no platform factor says:
// host processes, the bare-metal reference.
const DefaultPlatform = "native"

// Neighbour and packaging levels.
const (
	NeighbourNone = "none" // the target alone: S0's Case 1, the baseline of every IR
	NeighbourIdle = "idle" // a neighbour that sleeps: the A/A check of the instrument
	PackSame      = "same-container"
	// PackPod runs each neighbour in a container of its own in the
	// target's pod (a platform with pods): the target's network namespace
	// and node, a cgroup of its own.
	PackPod      = "same-pod"
	PackSeparate = "separate-containers"
	// RoleNeighbour qualifies placement factors for the neighbours:
	// neighbour.cpuset: ["1"] pins them away from the target.
	RoleNeighbour = "neighbour"
)

// OldNeighbour is the word experiment files and stored campaigns used for
// a neighbour before the concept had one name ("antagonist: [L, S]",
// "antagonist.cpuset"). Files may still spell it so; the parser and the
// store read it as FNeighbour.
const OldNeighbour = "antagonist"

// CanonicalFactor is name in the one vocabulary: the neighbour factor and
// its placement factors spelt with OldNeighbour become FNeighbour's
// ("antagonist.cpuset" is "neighbour.cpuset"); renamed says it was.
func CanonicalFactor(name string) (canonical string, renamed bool) {
	if name == OldNeighbour {
		return FNeighbour, true
	}
	if rest, ok := strings.CutPrefix(name, OldNeighbour+"."); ok {
		return RoleNeighbour + "." + rest, true
	}
	return name, false
}

// CanonicalFactors renames m's keys as CanonicalFactor does, in place.
func CanonicalFactors(m map[string]string) {
	for k, v := range m {
		if c, renamed := CanonicalFactor(k); renamed {
			delete(m, k)
			if _, taken := m[c]; !taken {
				m[c] = v
			}
		}
	}
}

// Packagings are the levels of the packaging factor.
var Packagings = []string{PackSame, PackPod, PackSeparate}

// Apart reports whether packaging runs the neighbours in hosting
// entities of their own (containers), not in the target's agent.
func Apart(packaging string) bool { return packaging == PackPod || packaging == PackSeparate }

// NeighboursOf splits a neighbour level into workload names; nil for
// none and idle.
func NeighboursOf(level string) []string {
	if level == "" || level == NeighbourNone || level == NeighbourIdle {
		return nil
	}
	return strings.Split(level, "+")
}

// Previous is the baseline level meaning "the level before this one in the
// file's order" (S2's layer-on-layer ratios); the first level is its own
// baseline. Stored as "previous:<level>,<level>,…" so a report needs no file.
const Previous = "previous"

// DropIrrelevant removes factors that the other levels make meaningless:
// the packaging and placement of neighbours when there is none.
func DropIrrelevant(levels map[string]string) {
	if a, ok := levels[FNeighbour]; !ok || a == NeighbourNone {
		delete(levels, FPackaging)
		for k := range levels {
			if strings.HasPrefix(k, RoleNeighbour+".") {
				delete(levels, k)
			}
		}
	}
}
