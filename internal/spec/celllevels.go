package spec

import (
	"fmt"
	"strconv"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Levels are a cell's factor levels, parsed: its shape (emulated hosts,
// pairs, instances), its underlay and pinning, the emulated machine's
// quota, and where each of its roles runs. The cell checks build them
// and plan resolves a cell from them, so the text of a level is read in
// one place, and a level that does not parse is a problem of the file.
type Levels struct {
	// Hosts is the number of emulated hosts: 1 (the machine itself, no
	// emulated hosts) unless the hosts factor says more.
	Hosts int
	// Pairs is the number of concurrent client/server chains (default 1).
	Pairs int
	// Instances is the number of concurrent copies of a single-role
	// workload (default 1).
	Instances int
	// Underlay is the links' rate, delay, jitter and loss (nothing unless
	// the underlay factor names them).
	Underlay vocab.Underlay
	// Pinning is the cell's pinning level: none when the cell sets none.
	Pinning vocab.Pinning
	// MachineCPUs is the emulated machine's CPU quota in cores: the
	// cell's machine.cpus level, else the machine mapping's cpus; 0 for
	// none.
	MachineCPUs float64

	// roles are the placements of the cell's workload's roles and of its
	// neighbours; common is where a role the cell does not name runs.
	roles  map[string]rolePlace
	common rolePlace
}

// rolePlace is where one role of a cell runs and the emulated host it is
// on (see Levels.HostOf).
type rolePlace struct {
	placement Placement
	host      int
}

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
	// say, and the role goes where Levels.HostOf spreads it.
	Host string
	// Node names a cluster node ("" when the cell does not).
	Node string
	// Limits are the limit levels above, parsed; CpusetSize is how many
	// CPUs the cpuset names (0: none). LevelsOf fills both.
	Limits     platform.Limits
	CpusetSize int
}

// LevelsOf parses the levels of cell c, a cell of e (its levels were
// checked when the file was read).
func (e *Experiment) LevelsOf(c result.Cell) (Levels, error) {
	underlay, err := vocab.ParseUnderlay(c.Factors[vocab.FUnderlay])
	if err != nil {
		return Levels{}, err
	}
	lv := Levels{Hosts: countOf(c.Factors, vocab.FHosts), Pairs: countOf(c.Factors, vocab.FPairs), Instances: countOf(c.Factors, vocab.FInstances),
		Underlay: underlay, Pinning: pinningOf(c.Factors), MachineCPUs: e.machineCPUs(c.Factors), roles: map[string]rolePlace{}}
	if lv.common, err = lv.place(c.Factors, "", nil); err != nil {
		return Levels{}, err
	}
	var chain []string
	if ws, ok := workload.Lookup(c.WorkloadType); ok {
		chain = ws.RoleList()
	}
	for _, role := range chain {
		if lv.roles[role], err = lv.place(c.Factors, role, chain); err != nil {
			return Levels{}, fmt.Errorf("%s: %w", role, err)
		}
	}
	neighbour := vocab.RoleNeighbour
	if lv.roles[neighbour], err = lv.place(c.Factors, neighbour, []string{neighbour}); err != nil {
		return Levels{}, fmt.Errorf("%s: %w", neighbour, err)
	}
	return lv, nil
}

// Placement is where role runs.
func (lv Levels) Placement(role string) Placement { return lv.rolePlace(role).placement }

// HostOf is the emulated host (1-based) role runs on when the cell has
// more than one: the host factor when the cell has one, else spread
// along the workload's chain — the driver on host 1, its server on host
// 2, that server's own server on host 3, wrapping around — so traffic
// crosses the underlay. The neighbours are a chain of their own.
func (lv Levels) HostOf(role string) int { return lv.rolePlace(role).host }

func (lv Levels) rolePlace(role string) rolePlace {
	if rp, ok := lv.roles[role]; ok {
		return rp
	}
	return lv.common
}

// place resolves where role runs, chain being the roles it spreads along
// over the emulated hosts (servers first, the driver last).
func (lv Levels) place(factors map[string]string, role string, chain []string) (rolePlace, error) {
	pl := placementFor(factors, role)
	var err error
	if pl.Limits, err = pl.limits(); err != nil {
		return rolePlace{}, err
	}
	if pl.Cpuset != vocab.NoLimit && pl.Cpuset != "" {
		cpus, err := parseCPUList(pl.Cpuset, 0)
		if err != nil {
			return rolePlace{}, fmt.Errorf("cpuset %q: %w", pl.Cpuset, err)
		}
		pl.CpusetSize = len(cpus)
	}
	return rolePlace{placement: pl, host: hostOf(pl, role, chain, lv.Hosts)}, nil
}

// hostOf is the emulated host of role placed at pl, along chain, among n
// hosts (see Levels.HostOf).
func hostOf(pl Placement, role string, chain []string, n int) int {
	if h, err := strconv.Atoi(pl.Host); err == nil && h > 0 {
		return h
	}
	for i, r := range chain {
		if r == role {
			return (len(chain)-1-i)%n + 1
		}
	}
	return 1
}

// placementFor resolves the placement of a role from a cell's factor
// levels: the role-qualified factor wins over the plain one, which wins
// over the default.
func placementFor(factors map[string]string, role string) Placement {
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

// limits are the placement's limit levels as the platform's limits.
func (pl Placement) limits() (platform.Limits, error) {
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

// countOf is a count factor's level (hosts, pairs, instances): 1 when the
// cell does not set it.
func countOf(factors map[string]string, name string) int {
	n, err := strconv.Atoi(factors[name])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pinningOf is a cell's pinning level: none when the cell does not set one.
func pinningOf(factors map[string]string) vocab.Pinning {
	if v := factors[vocab.FPinning]; v != "" {
		return vocab.Pinning(v)
	}
	return vocab.PinNone
}

// machineCPUs is the emulated machine's CPU quota for a cell, in cores:
// its machine.cpus level, else the machine mapping's cpus; 0 for none.
func (e *Experiment) machineCPUs(factors map[string]string) float64 {
	if v, ok := factors[vocab.FMachineCPUs]; ok {
		f, _ := strconv.ParseFloat(v, 64) // "none": 0
		return f
	}
	return e.Envelope.CPUs
}
