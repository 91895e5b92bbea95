// Package invocation is the typed command line of ctrbench's agent: what
// the orchestrator asks an instance to run. It is encoded once (Args, by
// the runners and platforms) and decoded once (Bind, by the CLI's agent
// commands), with the flag names written only here.
package invocation

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Kind is the agent subcommand.
type Kind string

const (
	// Run runs one role of a workload once and prints its result.
	Run Kind = "run"
	// Loop runs a workload over and over as a neighbour until SIGTERM.
	Loop Kind = "loop"
)

// Counters says which counters are the instance's own: its cgroup's (a
// container, or a process under limits) and its network namespace's.
type Counters struct {
	Cgroup bool
	Netns  bool
}

// ImageWorkdirEnv is the variable in which a platform that runs a user's
// image's commands as host processes (Agent.Root) gives the agent the
// image's working directory.
const ImageWorkdirEnv = "CTRBENCH_IMAGE_WORKDIR"

// ImageCommandEnv is the variable in which a platform running an instance
// from a user's image gives the agent the image's own command (its
// ENTRYPOINT then CMD, as JSON): what runs when the file names none.
const ImageCommandEnv = "CTRBENCH_IMAGE_COMMAND"

// KeyEnv is the variable in which a platform gives the agent the key it
// signs its output with (result.NewKey): in the environment, which only
// the agent's own user can read, never in the arguments, which every
// process can. The agent takes it out of its environment at once.
const KeyEnv = "CTRBENCH_TRIAL_KEY"

// ImageEnv is the environment of an agent running a user's image's
// commands where the platform, not an engine, sets it (a host process,
// an LXC container): the image's own environment (PATH as a container's
// when it sets none), its WORKDIR and its own command.
func ImageEnv(env []string, workdir string, command []string, defaultPath string) []string {
	out := append(slices.Clone(env), HandOver(workdir, command)...)
	if !slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "PATH=") }) {
		out = append(out, "PATH="+defaultPath)
	}
	return out
}

// HandOver is what a platform hands the agent of a user's image in its
// environment: the image's WORKDIR and its own command (ENTRYPOINT then
// CMD), where the image's own environment is the container's already.
func HandOver(workdir string, command []string) []string {
	out := []string{ImageWorkdirEnv + "=" + workdir}
	if len(command) > 0 {
		b, _ := json.Marshal(command)
		out = append(out, ImageCommandEnv+"="+string(b))
	}
	return out
}

// Agent is one invocation of `ctrbench agent run|loop`.
type Agent struct {
	Kind     Kind
	Workload string // workload type, e.g. cpu.primes, or idle for a loop
	Params   string // JSON object of parameter name -> value; "" = {}
	// Role, Bind, Target: run only. Bind "" is loopback (127.0.0.1).
	Role string
	Bind string
	// Port is the port a server listens on, 0 for any free one: a port an
	// engine publishes must be known before the instance is created.
	Port   int
	Target string // host:port of the server, for a client
	// Ports are where the server's engine published its other ports
	// ("6379/tcp" → "HOST:PORT"), for a client (workload.Env.Ports).
	Ports map[string]string
	// DataDir is where disk workloads write; "" = the system's temporary
	// directory. The platform sets it where it mounts storage.
	DataDir string
	// Root is the unpacked root filesystem of a user's image that the
	// workload's commands run in (chroot): a host process running the
	// same binaries as the image's containers. Run only.
	Root string
	// Neighbours are neighbours to loop beside the target in this same
	// instance ("TYPE=PARAMS_JSON" or "idle"); run only.
	Neighbours []string
	Counters   Counters
	// JoinCgroups are cgroup directories the agent enters before any work:
	// how a platform without cgroups of its own applies limits.
	JoinCgroups []string
	// WaitNet: ctrbench wires the namespace from outside after the start;
	// wait for an address first. Run only.
	WaitNet bool
	// WaitRoute: before the workload, wait until the target's host
	// answers (ICMP echo): on a cluster's overlay a new task's address
	// reaches the other nodes by gossip. Run only, with a target.
	WaitRoute bool
	// ProbePort: a server also accepts (and at once closes) connections
	// on this port for as long as it runs, so a client can learn that a
	// front its platform put before it (a Kubernetes Service) carries
	// traffic without touching the workload's own port. Run only.
	ProbePort int
	// WaitConnect: before the workload, connect to this host:port until
	// a connection is accepted (the server's probe port through its
	// front). Run only.
	WaitConnect string
	// WaitGo: announce "ready" and begin the measured run only when the
	// go signal (SIGUSR1) arrives, so copies whose start-up takes long
	// (nested parents, many containers) begin together once all are up. Run only.
	WaitGo bool
	// Linger: after printing the result, wait to be stopped (SIGTERM) or
	// removed instead of exiting, so the platform ends its instances one
	// at a time (platform.EndOneAtATime). Run only.
	Linger bool
	// Key is the key the agent signs its events with; not an argument:
	// a platform puts Env() into the agent's environment.
	Key string
}

// Env is what the invocation puts in the agent's environment: its key.
func (a Agent) Env() []string {
	if a.Key == "" {
		return nil
	}
	return []string{KeyEnv + "=" + a.Key}
}

// Flag names, written once.
const (
	flagWorkload    = "workload"
	flagParams      = "params"
	flagRole        = "role"
	flagBind        = "bind"
	flagPort        = "port"
	flagTarget      = "target"
	flagPorts       = "ports"
	flagDataDir     = "data-dir"
	flagRoot        = "root"
	flagNeighbour   = "neighbour"
	flagTelemetry   = "telemetry"
	flagJoinCgroups = "join-cgroups"
	flagWaitNet     = "wait-net"
	flagWaitRoute   = "wait-route"
	flagProbePort   = "probe-port"
	flagWaitConnect = "wait-connect"
	flagWaitGo      = "wait-go"
	flagLinger      = "linger"
)

// Args encodes the invocation as the arguments of the ctrbench binary.
func (a Agent) Args() []string {
	args := []string{"agent", string(a.Kind), "--" + flagWorkload, a.Workload}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, "--"+flag, v)
		}
	}
	add(flagParams, a.Params)
	add(flagRole, a.Role)
	add(flagBind, a.Bind)
	if a.Port != 0 {
		add(flagPort, strconv.Itoa(a.Port))
	}
	add(flagTarget, a.Target)
	add(flagPorts, encodePorts(a.Ports))
	add(flagDataDir, a.DataDir)
	add(flagRoot, a.Root)
	for _, n := range a.Neighbours {
		add(flagNeighbour, n)
	}
	add(flagTelemetry, a.Counters.String())
	add(flagJoinCgroups, strings.Join(a.JoinCgroups, ","))
	if a.WaitNet {
		args = append(args, "--"+flagWaitNet)
	}
	if a.WaitRoute {
		args = append(args, "--"+flagWaitRoute)
	}
	if a.ProbePort != 0 {
		add(flagProbePort, strconv.Itoa(a.ProbePort))
	}
	add(flagWaitConnect, a.WaitConnect)
	if a.WaitGo {
		args = append(args, "--"+flagWaitGo)
	}
	if a.Linger {
		args = append(args, "--"+flagLinger)
	}
	return args
}

// Decoder holds flag values until Decode turns them into an Agent.
type Decoder struct {
	kind                   Kind
	a                      Agent
	telemetry, join, ports string
	neighbours             []string
}

// Bind defines the flags of the kind's subcommand on fs; after fs has
// parsed, Decode returns the invocation.
func Bind(kind Kind, fs *pflag.FlagSet) *Decoder {
	d := &Decoder{kind: kind}
	fs.StringVar(&d.a.Workload, flagWorkload, "", "workload type, e.g. cpu.primes"+map[Kind]string{Loop: ", or idle"}[kind])
	fs.StringVar(&d.a.Params, flagParams, "", "parameters as a JSON object of strings (default {})")
	fs.StringVar(&d.a.DataDir, flagDataDir, "", "directory in which disk workloads write (default: the system's temporary directory)")
	fs.StringVar(&d.telemetry, flagTelemetry, "", "counters that are this instance's own: cgroup, netns (comma-separated)")
	fs.StringVar(&d.join, flagJoinCgroups, "", "cgroup directories to enter before any work (comma-separated)")
	// A neighbour loops one end of a client/server workload when given
	// its role (its other end in another instance); every end otherwise.
	fs.StringVar(&d.a.Role, flagRole, "", "role, e.g. server or client (default main"+map[Kind]string{Loop: "; a neighbour: every role, over loopback"}[kind]+")")
	fs.StringVar(&d.a.Bind, flagBind, "", "address a server listens on (default 127.0.0.1)")
	fs.IntVar(&d.a.Port, flagPort, 0, "port a server listens on (default: any free one)")
	fs.StringVar(&d.a.Target, flagTarget, "", "host:port of the server, for a client")
	fs.StringVar(&d.ports, flagPorts, "", "where the server's other ports were published, for a client: PORT/PROTO=HOST:PORT,… (comma-separated)")
	if kind == Run {
		fs.StringVar(&d.a.Root, flagRoot, "", "root filesystem of a user's image the workload's commands run in (chroot)")
		fs.StringArrayVar(&d.neighbours, flagNeighbour, nil, "a neighbour to loop beside the target in this instance: TYPE=PARAMS_JSON, or idle (repeatable)")
		fs.BoolVar(&d.a.WaitNet, flagWaitNet, false, "wait until an interface besides loopback has an address (ctrbench wires the namespace from outside)")
		fs.BoolVar(&d.a.WaitRoute, flagWaitRoute, false, "before the workload, wait until the target's host answers an ICMP echo (a cluster's overlay learns new addresses by gossip)")
		fs.IntVar(&d.a.ProbePort, flagProbePort, 0, "a server also accepts and closes connections on this port while it runs (a probe of its front)")
		fs.StringVar(&d.a.WaitConnect, flagWaitConnect, "", "before the workload, connect to HOST:PORT until a connection is accepted (the server's probe port through its front)")
		fs.BoolVar(&d.a.WaitGo, flagWaitGo, false, "announce ready, then wait for SIGUSR1 before the measured run (copies begin together)")
		fs.BoolVar(&d.a.Linger, flagLinger, false, "after printing the result, wait to be stopped (SIGTERM) or removed instead of exiting")
	}
	return d
}

// Decode returns the invocation the parsed flags describe.
func (d *Decoder) Decode() (Agent, error) {
	a := d.a
	a.Kind = d.kind
	if a.Workload == "" {
		return a, fmt.Errorf("--%s is required", flagWorkload)
	}
	c, err := ParseCounters(d.telemetry)
	if err != nil {
		return a, err
	}
	a.Counters = c
	if d.join != "" {
		a.JoinCgroups = strings.Split(d.join, ",")
	}
	a.Neighbours = d.neighbours
	if a.Ports, err = decodePorts(d.ports); err != nil {
		return a, fmt.Errorf("--%s: %w", flagPorts, err)
	}
	return a, nil
}

// encodePorts writes published ports as --ports takes them, sorted.
func encodePorts(m map[string]string) string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ",")
}

// decodePorts reads --ports: PORT/PROTO=HOST:PORT, comma-separated.
func decodePorts(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if _, _, err := net.SplitHostPort(v); !ok || !strings.Contains(k, "/") || err != nil {
			return nil, fmt.Errorf("%q: want PORT/PROTO=HOST:PORT", kv)
		}
		m[k] = v
	}
	return m, nil
}

// Parse decodes args as Args encodes them ("agent", the kind, flags).
func Parse(args []string) (Agent, error) {
	if len(args) < 2 || args[0] != "agent" || (Kind(args[1]) != Run && Kind(args[1]) != Loop) {
		return Agent{}, fmt.Errorf("not an agent invocation: %q", args)
	}
	fs := pflag.NewFlagSet("agent "+args[1], pflag.ContinueOnError)
	d := Bind(Kind(args[1]), fs)
	if err := fs.Parse(args[2:]); err != nil {
		return Agent{}, err
	}
	if fs.NArg() > 0 {
		return Agent{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return d.Decode()
}

// String is the --telemetry form: "cgroup,netns", "cgroup", or "".
func (c Counters) String() string {
	var s []string
	if c.Cgroup {
		s = append(s, "cgroup")
	}
	if c.Netns {
		s = append(s, "netns")
	}
	return strings.Join(s, ",")
}

// ParseCounters reads the --telemetry form.
func ParseCounters(s string) (Counters, error) {
	var c Counters
	for _, t := range strings.Split(s, ",") {
		switch t {
		case "cgroup":
			c.Cgroup = true
		case "netns":
			c.Netns = true
		case "":
		default:
			return c, fmt.Errorf("--%s: unknown scope %q (cgroup, netns)", flagTelemetry, t)
		}
	}
	return c, nil
}

// flagConfig is `agent wireguard`'s one flag.
const flagConfig = "config"

// WireGuardArgs are the arguments of `agent wireguard`: a userspace
// WireGuard tunnel configured by config (JSON), run in an emulated host's
// namespace.
func WireGuardArgs(config []byte) []string {
	return []string{"agent", "wireguard", "--" + flagConfig, string(config)}
}

// BindWireGuard defines `agent wireguard`'s flag on fs; after fs has
// parsed, the returned string holds the configuration.
func BindWireGuard(fs *pflag.FlagSet) *string {
	return fs.String(flagConfig, "", "the tunnel as JSON: interface, mtu, address, private_key, listen_port, peers")
}
