package result

import (
	"math"
	"strconv"
	"strings"
)

// Scope says whose value an observation is.
type Scope string

const (
	ScopeTrial     Scope = "trial"     // the trial's: its only pair, or a single-role workload
	ScopePair      Scope = "pair"      // one client/server pair of several (Index)
	ScopeInstance  Scope = "instance"  // one copy of several of a single-role workload (Index)
	ScopeAggregate Scope = "aggregate" // all the pairs (or instances) of a trial together
	ScopeNeighbour Scope = "neighbour" // a neighbour beside the target (Index; 0 = all of them)
)

// Kind says what an observation measures.
type Kind string

const (
	KindMeasure   Kind = "measure"   // a metric the workload declares
	KindTelemetry Kind = "telemetry" // a resource counter read around the run (CPU time, retransmissions…)
	KindPairs     Kind = "pairs"     // a statistic across the pairs of a trial (fairness, overlap)
	KindInstances Kind = "instances" // the same across the instances of a trial
	KindLifecycle Kind = "lifecycle" // when a phase of an instance's life ended, seconds after it was asked for
)

// PerCopy reports whether s is one copy's of several: a pair's or an
// instance's.
func (s Scope) PerCopy() bool { return s == ScopePair || s == ScopeInstance }

// AcrossCopies reports whether k is a statistic across a trial's copies.
func (k Kind) AcrossCopies() bool { return k == KindPairs || k == KindInstances }

// MetricID is a metric's identity: which metric, whose, and what kind.
// It is comparable, so reports group by it.
type MetricID struct {
	Metric string
	Scope  Scope
	Kind   Kind
	Role   string
	Index  int
}

// String is the metric's name as reports print it, e.g. "throughput",
// "server.telemetry.cpu_seconds", "pair3.throughput", "pairs.jain",
// "neighbour2.telemetry.cpu_seconds". ParseMetricName reads it back.
func (id MetricID) String() string {
	var b strings.Builder
	switch {
	case id.Scope == ScopePair:
		b.WriteString("pair" + strconv.Itoa(id.Index) + ".")
	case id.Scope == ScopeInstance:
		b.WriteString(instanceName + strconv.Itoa(id.Index) + ".")
	case id.Scope == ScopeNeighbour && id.Index > 1:
		b.WriteString(neighbourName + strconv.Itoa(id.Index) + ".")
	case id.Scope == ScopeNeighbour:
		b.WriteString(neighbourName + ".")
	}
	if id.Kind.AcrossCopies() {
		b.WriteString(string(id.Kind) + ".")
	}
	if id.Role != "" {
		b.WriteString(id.Role + ".")
	}
	if id.Kind == KindTelemetry || id.Kind == KindLifecycle {
		b.WriteString(string(id.Kind) + ".")
	}
	b.WriteString(id.Metric)
	return b.String()
}

const (
	neighbourName    = "neighbour"
	oldNeighbourName = "antagonist"
	pairsName        = "pairs"
	instanceName     = "instance"
	telemetryName    = "telemetry"
)

// ParseMetricName reads a name as String prints it: the form in which
// result files before schema version 4 stored a metric's identity. pairs
// says whether the trial ran several pairs, so that an unqualified name is
// their aggregate. Workload and telemetry metric names never contain dots,
// so every dot-separated qualifier is one of the prefixes above or a role.
func ParseMetricName(name string, pairs bool) MetricID {
	id := MetricID{Scope: ScopeTrial, Kind: KindMeasure}
	if pairs {
		id.Scope = ScopeAggregate
	}
	first, rest, ok := strings.Cut(name, ".")
	if !ok {
		id.Metric = name
		return id
	}
	switch {
	case first == pairsName || first == string(KindInstances):
		id.Kind, id.Scope = Kind(first), ScopeAggregate
		first, rest, ok = strings.Cut(rest, ".")
	case strings.HasPrefix(first, instanceName) && isIndex(first[len(instanceName):]):
		id.Scope = ScopeInstance
		id.Index, _ = strconv.Atoi(first[len(instanceName):])
		first, rest, ok = strings.Cut(rest, ".")
	case strings.HasPrefix(first, "pair") && isIndex(first[len("pair"):]):
		id.Scope = ScopePair
		id.Index, _ = strconv.Atoi(first[len("pair"):])
		first, rest, ok = strings.Cut(rest, ".")
	case neighbourPrefix(first) == "":
		id.Scope = ScopeNeighbour
		first, rest, ok = strings.Cut(rest, ".")
		if first == telemetryName && ok {
			id.Index = 1 // the first neighbour's own counters
		}
	case isIndex(neighbourPrefix(first)):
		id.Scope = ScopeNeighbour
		id.Index, _ = strconv.Atoi(neighbourPrefix(first))
		first, rest, ok = strings.Cut(rest, ".")
	}
	if ok && first != telemetryName && first != string(KindLifecycle) {
		id.Role = first
		first, rest, ok = strings.Cut(rest, ".")
	}
	if ok && (first == telemetryName || first == string(KindLifecycle)) {
		id.Kind = Kind(first)
		first, rest, ok = strings.Cut(rest, ".")
	}
	if ok { // more qualifiers than any writer produced: keep the rest whole
		first += "." + rest
	}
	id.Metric = first
	return id
}

// neighbourPrefix is what follows "neighbour" at the start of s — or
// "antagonist", the name files before the one word for the concept wrote
// (schema 4's data step reads them) — and "-" when s starts with neither.
func neighbourPrefix(s string) string {
	for _, p := range []string{neighbourName, oldNeighbourName} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest
		}
	}
	return "-"
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && strconv.Itoa(n) == s
}

// Names of the statistics across a trial's copies (pairs or instances).
const (
	Jain        = "jain"          // Jain's fairness index of the copies' headline values
	MaxMinRatio = "max_min_ratio" // the largest copy's headline value over the smallest's
)

// Bounds is the range a metric's values can take, written once for every
// metric ctrbench records: a percentage is within [0, 100], an index or a
// flag within [0, 1], a ratio of the largest copy to the smallest at
// least 1, and every other quantity — a rate, a time, a size, a count —
// at least 0 (hi is +Inf). Reports keep intervals inside it; a value
// outside it makes the report treat the metric as unbounded.
func Bounds(id MetricID, unit string) (lo, hi float64) {
	switch {
	case id.Kind.AcrossCopies() && id.Metric == MaxMinRatio:
		return 1, math.Inf(1)
	case unit == "%":
		return 0, 100
	case unit == "index" || unit == "bool":
		return 0, 1
	}
	return 0, math.Inf(1)
}
