// Package agent is the in-container (or in-process) side of ctrbench: it
// runs one role of one workload and prints events as JSON lines on stdout —
// "ready" when a server accepts connections, then exactly one "result".
// Diagnostics go to stderr. The same static binary is the orchestrator.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/telemetry"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	"github.com/ctrbench/ctrbench/internal/workload"
	_ "github.com/ctrbench/ctrbench/internal/workloads" // registers the workload types
)

// Options is one agent run: the invocation (decoded from the command
// line) and where its output goes.
type Options struct {
	invocation.Agent
	Stdout io.Writer
	Stderr io.Writer
}

// defaults fills what an invocation may leave out.
func (o *Options) defaults() {
	if o.Role == "" {
		o.Role = workload.Main
	}
	if o.Bind == "" {
		o.Bind = "127.0.0.1"
	}
}

// scope is which counters are the instance's own; an agent that joined
// cgroups (a native agent under limits) has a cgroup of its own. machine:
// read the machine's softirqs and interrupts too — a trial's target does;
// a neighbour's loop does not (they would be the same machine's, labelled
// as the neighbour's).
func (o *Options) scope(machine bool) telemetry.Scope {
	sc := telemetry.Scope{Cgroup: o.Counters.Cgroup, Netns: o.Counters.Netns, Machine: machine}
	if len(o.JoinCgroups) > 0 {
		sc.Cgroup = true
	}
	return sc
}

// waitAddrTimeout bounds how long an agent waits for its address.
const waitAddrTimeout = 20 * time.Second

// waitForNet polls the interfaces until one besides loopback has an
// IPv4 address.
func waitForNet(ctx context.Context) error {
	deadline := time.Now().Add(waitAddrTimeout)
	for {
		ifs, _ := net.Interfaces()
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback != 0 || i.Flags&net.FlagUp == 0 {
				continue
			}
			addrs, _ := i.Addrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no network address appeared on this instance's interfaces (waited %s for ctrbench to wire them)", waitAddrTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// interfaces describes the network the agent sees: every interface but
// loopback with its addresses and MTU, e.g. "ctb0 198.18.1.2/24 mtu 1500".
func interfaces() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	var parts []string
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			continue
		}
		var as []string
		if addrs, err := i.Addrs(); err == nil {
			for _, a := range addrs {
				as = append(as, a.String())
			}
		}
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s %s mtu %d", i.Name, strings.Join(as, " "), i.MTU)))
	}
	if len(parts) == 0 {
		return "loopback only"
	}
	return strings.Join(parts, "; ")
}

// emitter writes events; a server's ready and the result may come from
// different goroutines.
type emitter struct {
	mu  sync.Mutex
	w   io.Writer
	key string // signs every line (result.Event.Line)
}

func (e *emitter) emit(ev result.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(ev.Line(e.key))
}

// Run runs the role and prints its result. The returned error is only for
// problems that prevent printing a result at all; a failed workload is a
// printed result with status failed.
func Run(ctx context.Context, o Options) error {
	trimText()
	o.defaults()
	em := &emitter{w: o.Stdout, key: o.Key}
	// Listening before the result goes out: a stop that came first would
	// otherwise be missed.
	var stop chan os.Signal
	if o.Linger {
		stop = make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		defer signal.Stop(stop)
	}
	res := run(ctx, o, em)
	em.emit(result.Event{Event: "result", Result: res})
	if o.Linger {
		select {
		case <-stop:
		case <-ctx.Done():
		}
	}
	return nil
}

// run runs the role's workload once, with its neighbours around it, and
// returns its result: failed, never nil, when anything went wrong — a
// panic too — and always with its workload, role and window.
func run(ctx context.Context, o Options, em *emitter) (res *result.Result) {
	started := time.Now()
	defer func() {
		if r := recover(); r != nil {
			res = result.Failf("agent panicked: %v", r)
		}
		res.Workload, res.Role = o.Workload, o.Role
		// A result that got as far as the measured run keeps that run as
		// its window (pairs combine and overlap windows); one that failed
		// before it spans the agent's life.
		if res.Started.IsZero() {
			res.Started, res.Ended = started, time.Now()
		}
	}()
	if err := settle(ctx, o); err != nil {
		return result.Failf("%v", err)
	}
	if o.ProbePort > 0 {
		stop, err := listenProbe(ctx, o.Bind, o.ProbePort)
		if err != nil {
			return result.Failf("%v", err)
		}
		defer stop()
	}
	spec, runFn, vals, failed := resolve(o)
	if failed != nil {
		return failed
	}
	data, err := dataDir(o.DataDir)
	if err != nil {
		return result.Failf("making the data directory in %q: %v", o.DataDir, err)
	}
	defer os.RemoveAll(data)
	w := newWorkloadEnv(o, em, data)
	scope := o.scope(true)
	running, failed := startNeighbours(ctx, o, data, w.env.Log)
	if failed != nil {
		return failed
	}
	if o.WaitGo {
		waitGo(ctx, em)
	}
	before := telemetry.Read(scope)
	oom := watchOOM(scope)
	runStart := time.Now()
	obs, raw, err := runFn(ctx, vals, w.env)
	runEnd := time.Now()
	if err == nil {
		obs = append(obs, telemetryObservations(telemetry.Diff(before, telemetry.Read(scope)))...)
	}
	res = &result.Result{Status: result.OK, Observations: obs, Seen: seen(data)}
	w.copyNoted(res.Seen)
	// The measured window is the workload's run, not the agent's start-up.
	defer func() { res.Started, res.Ended = runStart, runEnd }()
	if running != nil {
		res.Neighbours = running.Stop()
		if err == nil {
			if nerr := neighbour.Attach(res, runStart, runEnd); nerr != nil {
				err = nerr
			}
		}
	}
	if err != nil {
		res.Status, res.Error, res.Raw = result.Failed, err.Error(), raw
		if ctx.Err() != nil {
			res.Error = result.Interrupted + res.Error
		}
		res.Error += oom.note()
		return res
	}
	return checked(o, spec, res, obs, raw, &w.hists)
}

// workloadEnv is the environment a workload runs in and what the workload
// hands back through it while it runs, from any of its goroutines: its
// histograms and what it saw.
type workloadEnv struct {
	env     workload.Env
	hists   histograms
	noted   map[string]string
	notedMu sync.Mutex
}

// newWorkloadEnv is the environment of the role's workload, in data: where
// it listens or what it targets, its ready event (on em) and its log (on
// the agent's stderr).
func newWorkloadEnv(o Options, em *emitter, data string) *workloadEnv {
	w := &workloadEnv{noted: map[string]string{}}
	w.env = workload.Env{
		DataDir: data, Root: o.Root, Role: o.Role,
		Bind: o.Bind, Port: o.Port, Target: o.Target, Ports: o.Ports,
		Ready: func(addr string) { em.emit(result.Event{Event: "ready", Addr: addr}) },
		Log:   func(format string, a ...any) { fmt.Fprintf(o.Stderr, format+"\n", a...) },
	}
	w.env.Histogram = w.hists.add
	w.env.See = func(k, v string) { w.notedMu.Lock(); w.noted[k] = v; w.notedMu.Unlock() }
	return w
}

// copyNoted copies what the workload saw into seen.
func (w *workloadEnv) copyNoted(seen map[string]string) {
	w.notedMu.Lock()
	maps.Copy(seen, w.noted)
	w.notedMu.Unlock()
}

// startNeighbours starts the neighbours the role runs beside its workload,
// in data, logging to log; nil and nil when it has none, and a failed
// result when they cannot start.
func startNeighbours(ctx context.Context, o Options, data string, log func(format string, a ...any)) (*neighbour.Running, *result.Result) {
	neighbours, err := resolveNeighbours(o.Neighbours)
	if err != nil {
		return nil, result.Failf("%v", err)
	}
	var running *neighbour.Running
	if len(neighbours) > 0 {
		if running, err = neighbour.Start(ctx, neighbours, data, log); err != nil {
			return nil, result.Failf("starting neighbours: %v", err)
		}
	}
	return running, nil
}

// checked is res, of a workload that ran well, once the observations the
// workload and its telemetry made (obs; not the neighbours') are valid and
// its histograms the ones it declares; a user's workload keeps its output.
// Otherwise it is a failed result.
func checked(o Options, spec *workload.Spec, res *result.Result, obs []result.Observation, raw string, hists *histograms) *result.Result {
	for _, ob := range obs {
		if !ob.Better.Valid() || ob.Metric == "" || ob.Value != ob.Value {
			return result.Failf("workload %s reported an invalid observation %+v", o.Workload, ob)
		}
	}
	var err error
	if res.Histograms, err = hists.declared(spec); err != nil {
		return result.Failf("workload %s: %v", o.Workload, err)
	}
	// A user's workload keeps the output its numbers were read from (its
	// tail, bounded), so a reader can check them against it; a server's
	// log is kept only when it failed.
	if spec.User.Declared != nil && o.Role != workload.Server {
		res.Raw = raw
	}
	return res
}

// settle waits for what the agent must have before it runs: its cgroups
// joined, its network up, its route to the target, its server's front
// carrying connections.
func settle(ctx context.Context, o Options) error {
	if len(o.JoinCgroups) > 0 {
		if err := cgroup.JoinSelf(o.JoinCgroups); err != nil {
			return err
		}
	}
	if o.WaitNet {
		if err := waitForNet(ctx); err != nil {
			return err
		}
	}
	if o.WaitRoute && o.Target != "" {
		if err := waitForRoute(ctx, o.Target); err != nil {
			return err
		}
	}
	if o.WaitConnect != "" {
		return waitForConnect(ctx, o.WaitConnect)
	}
	return nil
}

// resolve finds the workload, its role's run and its parameters' values;
// a failed result says what was wrong.
func resolve(o Options) (*workload.Spec, workload.RunFunc, workload.Values, *result.Result) {
	spec, ok := workload.Lookup(o.Workload)
	if !ok {
		return nil, nil, nil, result.Failf("unknown workload type %q; types: %s", o.Workload, strings.Join(workload.Types(), ", "))
	}
	runFn, ok := spec.Run[o.Role]
	if !ok {
		return nil, nil, nil, result.Failf("workload %s has no role %q; roles: %s", o.Workload, o.Role, strings.Join(spec.RoleList(), ", "))
	}
	user := map[string]string{}
	if o.Params != "" {
		if err := json.Unmarshal([]byte(o.Params), &user); err != nil {
			return nil, nil, nil, result.Failf("parameters are not a JSON object of strings: %v", err)
		}
	}
	vals, errs := spec.Resolve(user)
	if len(errs) > 0 {
		var msgs []string
		for name, err := range errs {
			msgs = append(msgs, name+": "+err.Error())
		}
		return nil, nil, nil, result.Failf("bad parameters: %s", strings.Join(msgs, "; "))
	}
	// A workload whose file declares its metrics has the histograms of
	// those parameters.
	return spec.For(vals), runFn, vals, nil
}

// waitGo announces readiness and waits for the go signal (SIGUSR1) that
// starts every copy of a trial at one instant. It listens before
// announcing: a go that came first would otherwise end the agent
// (SIGUSR1's default action).
func waitGo(ctx context.Context, em *emitter) {
	goSig := make(chan os.Signal, 1)
	signal.Notify(goSig, syscall.SIGUSR1)
	em.emit(result.Event{Event: "ready"})
	select {
	case <-goSig:
	case <-ctx.Done():
	}
	signal.Stop(goSig)
}

// resolveNeighbours reads "TYPE=PARAMS_JSON" specs.
func resolveNeighbours(specs []string) ([]neighbour.Spec, error) {
	var out []neighbour.Spec
	for _, s := range specs {
		typ, params := neighbour.Parse(s)
		if typ == neighbour.Idle {
			out = append(out, neighbour.Spec{Type: typ})
			continue
		}
		ws, ok := workload.Lookup(typ)
		if !ok {
			return nil, fmt.Errorf("neighbour: unknown workload type %q", typ)
		}
		user := map[string]string{}
		if params != "" {
			if err := json.Unmarshal([]byte(params), &user); err != nil {
				return nil, fmt.Errorf("neighbour %s: parameters are not a JSON object of strings: %v", typ, err)
			}
		}
		vals, errs := ws.Resolve(user)
		if len(errs) > 0 {
			return nil, fmt.Errorf("neighbour %s: bad parameters: %v", typ, errs)
		}
		out = append(out, neighbour.Spec{Type: typ, Params: vals})
	}
	return out, nil
}

// Loop runs one workload as a neighbour in its own instance (packaging
// separate-containers) until ctx ends: it announces "ready" once the first
// iteration is under way, and its result lists when it was busy.
func Loop(ctx context.Context, o Options) error {
	trimText()
	scope := o.scope(false)
	em := &emitter{w: o.Stdout, key: o.Key}
	res := &result.Result{Workload: o.Workload, Role: "neighbour", Status: result.OK, Started: time.Now()}
	spec := o.Workload
	if o.Params != "" {
		spec += "=" + o.Params
	}
	ns, err := resolveNeighbours([]string{spec})
	if err == nil && o.Role != "" && o.Role != workload.Main {
		// One end of a client/server neighbour, its other in another instance.
		ns[0].End = &neighbour.End{Role: o.Role, Bind: o.Bind, Port: o.Port, Target: o.Target}
	}
	if err == nil && len(o.JoinCgroups) > 0 {
		err = cgroup.JoinSelf(o.JoinCgroups)
	}
	if err != nil {
		res.Status, res.Error = result.Failed, err.Error()
		em.emit(result.Event{Event: "result", Result: res})
		return nil
	}
	r, err := neighbour.Start(ctx, ns, o.DataDir, func(f string, a ...any) { fmt.Fprintf(o.Stderr, f+"\n", a...) })
	if err != nil {
		res.Status, res.Error = result.Failed, err.Error()
		em.emit(result.Event{Event: "result", Result: res})
		return nil
	}
	// Counters of this instance, sampled while it runs; the part over the
	// target's window is attached to the target's result.
	var samples []result.TelemetrySample
	sample := func() {
		samples = append(samples, result.TelemetrySample{At: time.Now(), Values: telemetry.Read(scope)})
		if len(samples) > 4000 { // a long trial: keep every other reading
			kept := samples[:0]
			for i := 0; i < len(samples); i += 2 {
				kept = append(kept, samples[i])
			}
			samples = kept
		}
	}
	sample()
	em.emit(result.Event{Event: "ready"})
	tick := time.NewTicker(telemetryEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			sample()
		case <-ctx.Done():
		}
	}
	sample()
	res.Neighbours = r.Stop()
	if len(res.Neighbours) == 1 && (scope.Cgroup || scope.Netns) {
		res.Neighbours[0].Telemetry = samples
	}
	res.Ended = time.Now()
	em.emit(result.Event{Event: "result", Result: res})
	return nil
}

// telemetryEvery is how often a neighbour samples its counters.
const telemetryEvery = 250 * time.Millisecond

// telemetryObservations reports telemetry as observations of kind
// telemetry. Their direction is "lower" (less resource used); they explain
// a result rather than score it.
func telemetryObservations(vals map[string]float64) []result.Observation {
	var out []result.Observation
	for _, m := range telemetry.Metrics {
		if v, ok := vals[m.Name]; ok {
			out = append(out, result.Observation{Metric: m.Name, Kind: result.KindTelemetry, Value: v, Unit: m.Unit, Better: result.Lower})
		}
	}
	return out
}

// fsTypes names the filesystem magic numbers a data directory may show.
var fsTypes = map[int64]string{
	0x794c7630: "overlay", 0xEF53: "ext4", 0x01021994: "tmpfs", 0x58465342: "xfs",
	0x9123683E: "btrfs", 0x65735546: "fuse", 0x6969: "nfs", 0x2FC12FC1: "zfs",
}

// seen records what the agent observes of its environment.
func seen(dataDir string) map[string]string {
	l := cgroup.Self()
	host, _ := os.Hostname()
	s := map[string]string{
		"hostname":       host,
		"cgroup.version": strconv.Itoa(l.Version),
		"cgroup.cpuset":  l.Cpuset,
		"cpu.affinity":   sysinfo.Affinity(),
		"pid":            strconv.Itoa(os.Getpid()),
		"net.interfaces": interfaces(),
	}
	if l.CPUs > 0 {
		s["cgroup.cpus"] = strconv.FormatFloat(l.CPUs, 'g', 6, 64)
	}
	if l.MemoryBytes > 0 {
		s["cgroup.memory"] = strconv.FormatInt(l.MemoryBytes, 10)
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dataDir, &st) == nil {
		name, ok := fsTypes[int64(st.Type)]
		if !ok {
			name = fmt.Sprintf("0x%x", st.Type)
		}
		s["data.dir"], s["data.fstype"] = dataDir, name
	}
	return s
}

// dataDir makes the trial's data directory in dir, by default the temporary
// directory, which a user's FROM-scratch image may not have: then /tmp is
// made as an image would have it (sticky, writable by all), in the
// entity's own root (a container's writable layer, an unpacked copy).
func dataDir(dir string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(dir, 0o777); err != nil {
				return "", err
			}
			if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
				return "", err
			}
		}
	}
	return os.MkdirTemp(dir, "ctrbench-data-")
}

// oomWatch counts the OOM killer's kills in the instance's cgroup over
// the run. Only an instance's own cgroup says whose processes they were.
type oomWatch struct {
	before float64
	known  bool
}

func watchOOM(scope telemetry.Scope) oomWatch {
	n, ok := cgroup.OOMKills()
	return oomWatch{before: n, known: ok && scope.Cgroup}
}

// note is what a failed run's reason gains when the OOM killer killed
// in the instance during the run: "" otherwise.
func (w oomWatch) note() string {
	after, ok := cgroup.OOMKills()
	if !w.known || !ok || after <= w.before {
		return ""
	}
	return fmt.Sprintf(" (out of memory: the kernel's OOM killer killed %.0f process(es) in this instance's cgroup during the run%s)", after-w.before, memoryLimit())
}

// memoryLimit is ", whose memory limit is …" when the instance has one.
func memoryLimit() string {
	if l := cgroup.Self(); l.MemoryBytes > 0 {
		return fmt.Sprintf(", whose memory limit is %d MiB", l.MemoryBytes>>20)
	}
	return ""
}
