// Package workload defines what a workload is — its parameters, metrics,
// roles and the external tools it needs — and the registry of all of them.
// The engine (orchestrator, agent) owns timing and placement; a workload only
// implements Run for each of its roles.
package workload

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Role names. A workload has either the single role Main, or Server and
// Client (the server is started first and must announce readiness).
const (
	Main   = "main"
	Server = "server"
	Client = "client"
)

// Metric describes one metric a workload reports.
type Metric struct {
	Name   string
	Unit   string
	Better result.Better
	Doc    string
	// Combine says how several pairs' values make the trial's.
	Combine Combine
	// Matrix: S0's interference matrices show it besides the headline
	// (Spec.MatrixMetrics).
	Matrix bool
}

// Tool is an external program a workload runs; the image builder copies it
// (with its shared libraries) into the workload image.
type Tool struct {
	Binary  string // name looked up in PATH, e.g. "iperf3"
	Package string // Debian package that provides it
}

// Env is what the agent hands a role when it runs it.
type Env struct {
	Role string
	// Bind is the address a server listens on ("127.0.0.1", "0.0.0.0", an IP).
	Bind string
	// Port is the port it listens on, 0 for any free one (ListenAddr): a
	// port an engine publishes is chosen before the instance exists. Only
	// a workload whose Spec says OneTCPPort, or has MorePorts, is given
	// one.
	Port int
	// Target is host:port of the server, for a client.
	Target string
	// Ports, for a client whose server's engine published more of its
	// ports than the one Target names (Spec.MorePorts), are where each
	// was published: "6379/tcp" → "HOST:PORT". Reach reads them.
	Ports map[string]string
	// Ready is called by a server once it accepts connections, with the
	// host:port it listens on.
	Ready func(addr string)
	// See records what the role saw of how it ran, with the trial (the
	// command a user's workload ran): a key and its value.
	See func(key, value string)
	// Log receives diagnostics; never the result.
	Log func(format string, a ...any)
	// DataDir is where disk workloads put their files: the container's
	// writable layer, a volume or a tmpfs, as the storage factor says. It
	// exists and is empty at the start of the trial.
	DataDir string
	// Root, when set, is the unpacked root filesystem of a user's image
	// that commands of the user's run in (chroot), as host processes.
	Root string
	// Histogram receives, before Run returns, each histogram the role
	// recorded (one the spec declares, encoded), to return with its
	// result: the observations are read from it, and the pairs of a trial
	// or the repetitions of a cell merge it.
	Histogram func(result.Histogram)
}

// Reach is the address at which a client reaches its server's port (proto
// "tcp" or "udp") on host: where the server's engine published it, when
// it did (Ports), else host:port.
func (e Env) Reach(host string, port int, proto string) string {
	if a, ok := e.Ports[vocab.Port{Number: port, Proto: proto}.String()]; ok {
		return a
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Publishable reports whether a published network can carry the
// workload: its server listens on the port it is given, and on the ports
// MorePorts names, if any.
func (s *Spec) Publishable() bool { return s.Serves.OneTCPPort || s.Serves.MorePorts != nil }

// RunFunc runs one role once. It returns observations, or an error that makes
// the trial failed. raw may carry the tool's output for the record.
type RunFunc func(ctx context.Context, p Values, env Env) (obs []result.Observation, raw string, err error)

// Spec is one workload type: what every workload declares are fields;
// what its server listens on (Serves), how a trial of it runs and how long
// (Trial), and what a kind of the user's computes from its parameters
// (User: exec, service) are parts.
type Spec struct {
	Type    string // e.g. cpu.primes
	Summary string
	Params  []Param
	// Metrics are what it measures, the headline first. Those marked
	// Matrix are shown by S0's interference matrices besides the headline
	// (MatrixMetrics).
	Metrics []Metric
	// Histograms are the distributions the driving role records and
	// returns, those its percentile metrics are read from.
	Histograms []Histogram
	Roles      []string // nil means []string{Main}
	Tools      []Tool
	Run        map[string]RunFunc // by role
	// Smoke are parameters for a run of a second or two: the end-to-end
	// test runs every registered workload with them on every platform.
	Smoke map[string]string
	// Serves is what its server listens on; zero for a workload that
	// cannot be published.
	Serves Serves
	// Trial is how a trial of it runs and how long it takes.
	Trial Trial
	// User holds what a kind of the user's (exec, service) computes from
	// its parameters; zero for a built-in.
	User User
}

// Serves is what a workload's server listens on (Spec.Serves).
type Serves struct {
	// OneTCPPort: its server listens on one TCP port, the one it is given
	// (Env.ListenAddr), and nothing else: a port an engine publishes
	// (network published) carries all of it.
	OneTCPPort bool
	// MorePorts, when set, are the ports its server listens on besides
	// the TCP port it is given (a Number of 0 is that port's number, on
	// another protocol), by its parameters' values: a published network
	// publishes them too, and the client reaches each where its engine
	// published it (Env.Reach). With OneTCPPort or MorePorts a workload
	// can be published.
	MorePorts func(v Values) []vocab.Port
	// Ready, when set, is how an outsider tells, by its parameters'
	// values, that its server is ready (a cluster's readiness probe of
	// the server's pod); nil: only its agent tells.
	Ready func(v Values) *vocab.Probe
}

// Trial is how a trial of a workload runs and how long it takes
// (Spec.Trial).
type Trial struct {
	// Lifecycle marks a workload whose trial is the life of its hosting
	// entities — created at once, run, exited, removed, each phase timed —
	// rather than the chain's measured run: its metrics come from the
	// lifecycle runner, the role's own result is each entity's.
	Lifecycle bool
	// Measures, when set, is how long one run measures with these
	// parameters, for a workload whose time is not its duration
	// parameter (RunTime); false when it cannot say.
	Measures func(params map[string]string) (time.Duration, bool)
	// Work, when set, estimates a run from the work its parameters ask at
	// rates it states (RunTime), for a workload whose time no parameter
	// gives or whose duration leaves work out.
	Work *Work
}

// User is what a workload kind of the user's (exec, service) computes from
// its parameters (Spec.User): the core asks these hooks, never the kind.
type User struct {
	// Declared reads the metrics the file declares, and the histograms
	// they are read from, from the parameters; Spec.Metrics and
	// Spec.Histograms are then empty.
	Declared func(params map[string]string) ([]Metric, []Histogram)
	// NamedTools lists the programs of the machine its parameters name
	// (exec's command): they go into the agent image with their shared
	// libraries, as Tools do.
	NamedTools func(params map[string]string) []Tool
	// TakesPlaceholders names the parameters whose {trial} and
	// {cell.<factor>} placeholders each trial binds (Bind).
	TakesPlaceholders []string
	// Role, for a workload whose roles run different things (a service's
	// client: its own image and command, in its own parameter), says what
	// a role runs (RoleOf); by default every role runs the image and the
	// command the parameters name.
	Role func(params map[string]string, role string) RoleRun
	// Portable, when set, says whether a role runs in any image the agent
	// is put in (ctrbench's own generator driving a user's server); by
	// default a role without an image of its own is portable when the
	// workload names no program of the machine (NeedOf).
	Portable func(params map[string]string, role string) bool
	// BoundByRun names, by parameter, more placeholders that the role
	// running it binds itself ({server.host} in a service's client).
	BoundByRun map[string][]string
	// Validate checks the parameters together, after each is valid alone
	// (a metrics contract against its format); errors by parameter name.
	Validate func(v Values) map[string]error
}

// MatrixMetrics names the metrics S0's interference matrices (report
// --matrix, the HTML report's heatmaps) show of a target of this type, one
// matrix each, as S0's tables show STREAM's four kernels: the headline
// (the first metric) first, then those marked Matrix. The placement advice
// judges by the headline whatever this lists.
func (s *Spec) MatrixMetrics() []string {
	if len(s.Metrics) == 0 {
		return nil
	}
	out := []string{s.Metrics[0].Name}
	for _, m := range s.Metrics[1:] {
		if m.Matrix {
			out = append(out, m.Name)
		}
	}
	return out
}

// RoleList returns the roles, Main when none are declared.
func (s *Spec) RoleList() []string {
	if len(s.Roles) == 0 {
		return []string{Main}
	}
	return s.Roles
}

// Param returns the named parameter.
func (s *Spec) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParamNames lists the parameter names in declaration order.
func (s *Spec) ParamNames() []string {
	n := make([]string, len(s.Params))
	for i, p := range s.Params {
		n[i] = p.Name
	}
	return n
}

// Metric returns the named metric.
func (s *Spec) Metric(name string) (Metric, bool) {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Resolve fills defaults and normalises user values. Unknown names and bad
// values are errors keyed by parameter name.
func (s *Spec) Resolve(user map[string]string) (Values, map[string]error) {
	errs := map[string]error{}
	out := Values{}
	for _, p := range s.Params {
		raw, ok := user[p.Name]
		if !ok {
			raw = p.Default
		}
		v, err := p.Normalize(raw)
		if err != nil {
			errs[p.Name] = err
			continue
		}
		out[p.Name] = v
	}
	if s.User.Validate != nil && len(errs) == 0 {
		errs = s.User.Validate(out)
		if errs == nil {
			errs = map[string]error{}
		}
	}
	for name := range user {
		if _, ok := s.Param(name); !ok {
			errs[name] = fmt.Errorf("unknown parameter %q for %s; allowed: %s", name, s.Type, strings.Join(s.ParamNames(), ", "))
		}
	}
	if len(errs) == 0 {
		errs = nil
	}
	return out, errs
}

var registry = map[string]*Spec{}

// Register adds a workload type; it panics on a duplicate or malformed spec,
// which is a programming error caught by the package tests.
func Register(s *Spec) {
	if _, dup := registry[s.Type]; dup {
		panic("workload: duplicate type " + s.Type)
	}
	for _, r := range s.RoleList() {
		if s.Run[r] == nil {
			panic(fmt.Sprintf("workload %s: no Run for role %s", s.Type, r))
		}
	}
	for _, p := range s.Params {
		if _, err := p.Normalize(p.Default); err != nil {
			panic(fmt.Sprintf("workload %s: default of %s: %v", s.Type, p.Name, err))
		}
	}
	if _, errs := s.Resolve(s.Smoke); errs != nil {
		panic(fmt.Sprintf("workload %s: smoke parameters: %v", s.Type, errs))
	}
	for _, m := range s.Metrics {
		if !m.Better.Valid() {
			panic(fmt.Sprintf("workload %s: metric %s has no direction", s.Type, m.Name))
		}
	}
	if err := s.For(s.Smoke).checkCombine(); err != nil {
		panic(fmt.Sprintf("workload %s: %v", s.Type, err))
	}
	registry[s.Type] = s
}

// Lookup returns the workload type.
func Lookup(typ string) (*Spec, bool) { s, ok := registry[typ]; return s, ok }

// Types lists the registered types, sorted.
func Types() []string {
	t := make([]string, 0, len(registry))
	for k := range registry {
		t = append(t, k)
	}
	sort.Strings(t)
	return t
}

// IsClientServer reports whether the workload has several roles: a chain
// of servers, each started and ready before the next, ending in the role
// that drives the load (the client). Roles[i+1] is the client of Roles[i].
func (s *Spec) IsClientServer() bool { return len(s.Roles) > 1 }

// HasRole reports whether r is one of the workload's roles.
func (s *Spec) HasRole(r string) bool {
	for _, x := range s.RoleList() {
		if x == r {
			return true
		}
	}
	return false
}

// RoleNames lists every role of every registered multi-role workload,
// sorted: the names a placement factor may be qualified with.
func RoleNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range registry {
		if !s.IsClientServer() {
			continue
		}
		for _, r := range s.Roles {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ListenAddr is where a server listens: Bind and Port (any free port for
// 0), as net.Listen takes it.
func (e Env) ListenAddr() string {
	return net.JoinHostPort(e.Bind, strconv.Itoa(e.Port))
}
