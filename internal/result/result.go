// Package result holds the one record that flows through ctrbench:
// an agent's Result (what one workload role measured in one trial) and
// the Observations it carries. Orchestrator, store, stats and report all
// speak these types; none of them needs to know how a number was made.
package result

import (
	"fmt"
	"time"
)

// Better says which direction of a metric is an improvement.
type Better string

const (
	Higher Better = "higher"
	Lower  Better = "lower"
)

// Valid reports whether b is one of the two directions.
func (b Better) Valid() bool { return b == Higher || b == Lower }

// Observation is one measured value of one metric. Its identity is
// structured (see MetricID): a workload sets only Metric, and the agent and
// the trial runner say whose value it is and what kind.
type Observation struct {
	Metric string  `json:"metric"` // the metric's own name, as its workload or telemetry declares it
	Scope  Scope   `json:"scope,omitempty"`
	Kind   Kind    `json:"kind,omitempty"`
	Role   string  `json:"role,omitempty"`  // the role that reported it; "" for the measured (driving) role
	Index  int     `json:"index,omitempty"` // 1-based pair or neighbour number; 0 for all of them
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Better Better  `json:"better"`
}

// ID is the observation's identity, with defaults filled in.
func (o Observation) ID() MetricID {
	id := MetricID{Metric: o.Metric, Scope: o.Scope, Kind: o.Kind, Role: o.Role, Index: o.Index}
	if id.Scope == "" {
		id.Scope = ScopeTrial
	}
	if id.Kind == "" {
		id.Kind = KindMeasure
	}
	return id
}

// Status of a trial or of one agent's run.
type Status string

const (
	OK      Status = "ok"
	Failed  Status = "failed"
	Timeout Status = "timeout"
)

// Result is what an agent prints as its final JSON line: the outcome of
// running one role of one workload once.
type Result struct {
	Workload     string        `json:"workload"` // workload type, e.g. cpu.primes
	Role         string        `json:"role"`     // main, server or client
	Status       Status        `json:"status"`
	Error        string        `json:"error,omitempty"`
	Observations []Observation `json:"observations,omitempty"`
	// Raw holds the tool's own output when the run failed or could not be
	// parsed, so a reader can see what went wrong, and a user's workload's
	// when it ran well: the tail of the output its numbers were read from.
	Raw     string    `json:"raw,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Seen records what the agent observed about its own environment
	// (cgroup limits, hostname, ...), for the record and for tests.
	Seen map[string]string `json:"seen,omitempty"`
	// Neighbours are the neighbours this agent ran beside the target, or,
	// for `agent loop`, the one it ran on its own.
	Neighbours []NeighbourReport `json:"neighbours,omitempty"`
	// Histograms are the distributions the run recorded, from which its
	// percentiles were read; several pairs' or repetitions' merge.
	Histograms []Histogram `json:"histograms,omitempty"`
}

// Histogram is a distribution a workload recorded with an HDR histogram,
// encoded, so that percentiles can be computed again over several pairs of
// a trial or several trials of a cell (pooled).
type Histogram struct {
	// Metric names what it is a distribution of ("latency", "fct"); the
	// workload's percentile metrics say which histogram they read.
	Metric string `json:"metric"`
	Scope  Scope  `json:"scope,omitempty"`
	Role   string `json:"role,omitempty"`
	Index  int    `json:"index,omitempty"`
	// Unit is the unit of the recorded integer values ("us", "ns").
	Unit string `json:"unit"`
	// Data is the histogram in HdrHistogram's compressed V2 encoding.
	Data []byte `json:"data"`
}

// Window is a span during which a neighbour was running its workload.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// NeighbourReport is what one neighbour did.
type NeighbourReport struct {
	Type       string   `json:"type"`
	Iterations int      `json:"iterations"`
	Failures   int      `json:"failures"`
	LastError  string   `json:"last_error,omitempty"`
	Windows    []Window `json:"windows"`
	// Telemetry of a neighbour in an instance of its own, sampled while it
	// ran: the part over the target's window is attached to the trial.
	Telemetry []TelemetrySample `json:"telemetry,omitempty"`
}

// TelemetrySample is a reading of cumulative counters at a moment.
type TelemetrySample struct {
	At     time.Time          `json:"at"`
	Values map[string]float64 `json:"values"`
}

// Interrupted begins the error of a result whose agent was told to stop
// (SIGTERM, Ctrl-C) before its workload ended.
const Interrupted = "interrupted: "

// Failf returns a failed Result with a formatted reason.
func Failf(format string, a ...any) *Result {
	return &Result{Status: Failed, Error: fmt.Sprintf(format, a...)}
}

// Event is one line of the agent's stdout protocol. Agents print any number
// of events; "ready" (a server is listening at Addr) and "result" (final).
type Event struct {
	Event  string  `json:"event"`
	Addr   string  `json:"addr,omitempty"`
	Result *Result `json:"result,omitempty"`
}
