// Package spec reads experiment files: the declarative description of a
// campaign (factors, workloads, repetitions). It validates everything before
// anything runs, reporting every problem with file:line, and expands the file
// into cells and a seeded, interleaved trial order. Experiment files are data;
// this package does nothing but read and compute.
package spec

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/workload"
	"gopkg.in/yaml.v3"
)

// Experiment is a validated experiment file.
type Experiment struct {
	Name        string
	Description string
	Seed        int64
	SeedGiven   bool // false when the file had no seed and one was drawn
	// Notes say where the file used an accepted older spelling (the old
	// word for a neighbour), for the command to print.
	Notes []string
	// Repetitions is the number of recorded trials per cell; with
	// Adaptive, the minimum.
	Repetitions int
	// Adaptive, when set, adds rounds for the cells whose interval is not
	// yet tight enough ("repetitions: {min, max, rci}").
	Adaptive *Adaptive
	// Budget bounds the time trials may take, all together (0: none);
	// adaptive rounds stop when it is spent.
	Budget  time.Duration
	Warmup  int
	Timeout time.Duration
	// Retries is how many times a trial the platform failed (an engine
	// that stopped answering, an instance that could not start) is tried
	// again; a workload's failure is never retried.
	Retries   int
	Factors   []Factor // in file order
	Exclude   []map[string]string
	Baseline  map[string]string
	Workloads []Workload
	// Envelope emulates a smaller machine ("machine:" in the file): every
	// instance of the campaign runs inside one cgroup with these limits,
	// as on a host of that size (S0: the host is twice Case 1's limits).
	Envelope Envelope
	// Symmetric measures both sides of every pairing: see Cells.
	Symmetric bool
	// SubnetPool is where every address the campaign configures comes
	// from ("subnet_pool:", --subnet-pool); zero: subnets.Default.
	SubnetPool subnets.Pool

	Path string // the file read
	Text string // the file's text, followed by the --set overrides as comments
}

// Factor is one dimension of the full factorial.
type Factor struct {
	Name   string
	Levels []string
	// Bundle, for a factor whose levels are named sets of other factors'
	// levels ("layer: {reference: {platform: native, network: host}}"):
	// level -> the levels it sets. nil for an ordinary factor.
	Bundle map[string]map[string]string
}

// Workload is one workload entry of the file.
type Workload struct {
	Name   string
	Type   string
	Params workload.Values // resolved: defaults filled, values normalised
	Spec   *workload.Spec
	// nodes are the file's parameter nodes by name, for problems found
	// once the factors are known (placeholders).
	nodes map[string]*yaml.Node
}

// Defaults for keys an experiment file may omit.
const (
	DefaultRepetitions = 3
	DefaultWarmup      = 0
	DefaultTimeout     = 5 * time.Minute
	DefaultRetries     = 1
	MaxRetries         = 5
)

// Adaptive repetition: after Min recorded trials per cell, more rounds run
// for the cells whose 95% interval half-width, relative to the mean, is
// above RCI, until Max (or the experiment's Budget).
type Adaptive = result.Adaptive

// Envelope is the emulated machine's size; zero values are not limited.
type Envelope struct {
	CPUs        float64
	Cpuset      string
	MemoryBytes int64
}

// IsZero reports whether the experiment emulates no machine.
func (v Envelope) IsZero() bool { return v == Envelope{} }

// HostFiles are the files of the machine the experiment names (its
// users' image archives, absolute), each with what it is for: ctrbench
// only reads them. A run and a dry run show them before anything starts.
func (e *Experiment) HostFiles() []string {
	seen := map[string][]string{}
	for _, w := range e.Workloads {
		for _, role := range w.Spec.RoleList() {
			if _, path := w.Spec.ImageOf(w.Params, role); path != "" && !slices.Contains(seen[path], w.Name) {
				seen[path] = append(seen[path], w.Name)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for path, names := range seen {
		out = append(out, fmt.Sprintf("%s (image archive of %s)", path, strings.Join(names, ", ")))
	}
	sort.Strings(out)
	return out
}
