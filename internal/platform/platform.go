// Package platform defines where an agent runs — a host process, a Docker
// container, and later other runtimes — as drivers that declare what they
// can do. Each platform is one package that registers a Driver; the rest of
// ctrbench asks a driver's Capabilities and never compares platform names.
// Every platform passes the conformance suite in platformtest.
//
// This package declares; it does not act: it holds the interfaces, the
// registry and the rules that follow from capabilities.
package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Label keys carried by every object ctrbench creates (containers, networks,
// volumes, images), so `ctrbench clean` can find leftovers.
const (
	LabelManaged  = "io.ctrbench.managed"  // always "true"
	LabelCampaign = "io.ctrbench.campaign" // campaign ID
	LabelOwnerPID = "io.ctrbench.owner-pid"
	LabelTrial    = "io.ctrbench.trial" // the trial's seq
	LabelRole     = "io.ctrbench.role"  // the role the instance runs
	LinkPrefix    = vocab.LinkPrefix    // every host link ctrbench creates starts with this
)

// Limits are cgroup limits for one instance; zero values mean "no limit".
type Limits struct {
	CPUs        float64 `json:"cpus,omitempty"`   // CFS quota in cores, e.g. 1.5
	Cpuset      string  `json:"cpuset,omitempty"` // e.g. "0" or "0-1"
	MemoryBytes int64   `json:"memory,omitempty"`
	// Block I/O: a proportional weight (10..1000, where the kernel supports
	// it) and throttles in bytes per second on the device that holds the
	// instance's data (the platform finds it).
	BlkioWeight uint16 `json:"blkio_weight,omitempty"`
	ReadBps     int64  `json:"read_bps,omitempty"`
	WriteBps    int64  `json:"write_bps,omitempty"`
	// Pids caps the instance's processes and threads (pids.max).
	Pids int64 `json:"pids,omitempty"`
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// InstanceSpec says what to start.
type InstanceSpec struct {
	Name string // unique per campaign, e.g. ctrbench-3f2a-t12-server
	// Agent is the ctrbench agent the instance runs. The platform may set
	// its DataDir (where the instance's storage is mounted) and JoinCgroups
	// (limits it applies by cgroups the agent enters) before encoding it.
	Agent invocation.Agent
	// Network is what the platform provides: one of its Capabilities.
	// Networks, or vocab.None when ctrbench wires the namespace (netlab)
	// or it joins another instance's (ShareNetworkWith).
	Network vocab.Network
	// ShareNetworkWith names a running instance (by its Name) whose network
	// namespace this one joins: both ends over loopback. Overrides Network.
	ShareNetworkWith string
	// Publish, on a network that publishes (vocab.Network.Publishes), are
	// the server's ports its engine publishes besides the agent's
	// (Agent.Port, TCP), each where the engine chooses.
	Publish []vocab.Port
	// Plug, for network a lab mode the platform plugs into
	// (Capabilities.Net.Plugs), takes the instance's own link on the machine
	// (a tap) as a port of that network and returns the address the
	// instance is to configure; the port goes when the trial ends.
	Plug func(ctx context.Context, link string) (Plugged, error)
	// NetNS is the path of an emulated host's network namespace to run in:
	// for platforms without a namespace of their own (OwnNetNS false), and
	// for an instance of a platform with a Net.Holder on network Host (a namespace it
	// holds, adopted by the lab), and for one of a platform that joins a
	// namespace by path (Capabilities.Net.JoinsNSPath) on network Host.
	NetNS string
	// Host is the node of a cluster platform the instance runs on
	// (1-based; 0: the platform chooses); Node, when set, names the node
	// (its hostname, or a label "key=value" it carries) instead.
	Host   int
	Node   string
	Limits Limits
	Labels map[string]string
	// Storage is where the agent's data directory lives: "" or Layer (the
	// platform's own filesystem), Volume or Tmpfs.
	Storage vocab.Storage
	// Options are the levels of the platform's own factors
	// (Capabilities.Own.Factors), defaults filled.
	Options map[string]string
	// Image, when set, is the user's image the instance runs from, with
	// ctrbench's agent put into it (Capabilities.UserImages); nil: the
	// agent image.
	Image *Image
	// Ready, for a server, is how an orchestrator can tell it is ready
	// (a pod's readiness probe: a Service sends it traffic only then);
	// nil when only its agent can.
	Ready *vocab.Probe
	// Beside are agents to run in containers beside the instance's own,
	// in its pod (Capabilities.Pods): the instance is then a Pod.
	Beside []Container
}

// Container is an agent that runs beside an instance's own, in its pod:
// its network namespace and node, with limits of its own, from the agent
// image or a user's image.
type Container struct {
	Name   string // unique in the pod, a DNS-1123 label
	Agent  invocation.Agent
	Limits Limits
	Image  *Image
}

// Plugged is the address the lab gave a link it took as a port
// (InstanceSpec.Plug).
type Plugged struct {
	IP      string // the instance's address, without prefix length
	Prefix  int    // its prefix length
	Gateway string // the host's address on the network: the default route
	MTU     int
}

// Image is a user's image: one in the machine's engine (Ref) or an
// archive (a docker save or OCI layout tar, an absolute path).
type Image struct {
	Ref     string
	Archive string
}

// Key names the image among a campaign's, e.g. "archive:/srv/redis.tar".
func (i Image) Key() string {
	if i.Archive != "" {
		return "archive:" + i.Archive
	}
	return "ref:" + i.Ref
}

// String is the image as a user wrote it.
func (i Image) String() string {
	if i.Archive != "" {
		return i.Archive
	}
	return i.Ref
}

// Exit is how an instance ended.
type Exit struct {
	Code   int
	Stderr string // tail of stderr, for failure reasons
	// Vanished: the instance was removed by someone else than ctrbench
	// while it ran (`docker rm -f`): the platform's failure, not the
	// workload's.
	Vanished bool
}

// Timings are the moments an instance's phases ended, as the platform saw
// them; a phase the platform cannot time is absent.
type Timings struct {
	Requested time.Time // Start was called
	At        map[vocab.Phase]time.Time
}

// Observations are the timings as lifecycle observations of role: each
// phase timed, in seconds after Start was called, in the order phases
// happen; a creation-time runner records them.
func (t Timings) Observations(role string) []result.Observation {
	var out []result.Observation
	for _, ph := range vocab.Phases {
		if at, ok := t.At[ph]; ok && !t.Requested.IsZero() {
			out = append(out, result.Observation{Metric: string(ph), Kind: result.KindLifecycle, Role: role,
				Value: at.Sub(t.Requested).Seconds(), Unit: "s", Better: result.Lower})
		}
	}
	return out
}

// Instance is one running agent.
type Instance interface {
	// Stdout streams the agent's standard output while it runs; it reaches
	// EOF when the agent exits.
	Stdout() io.Reader
	// Wait blocks until the agent exits or ctx ends.
	Wait(ctx context.Context) (Exit, error)
	// IP is the instance's own address, reachable from the host and from
	// instances on the same network; "" when it shares the host's network
	// namespace.
	IP() string
	// Stop asks the agent to finish (SIGTERM): an `agent loop` neighbour
	// then prints its result and exits. It does not remove the instance.
	Stop(ctx context.Context) error
	// Remove stops the agent if it still runs and releases everything made
	// for it. It is safe to call more than once.
	Remove(ctx context.Context) error
	// Timings says when each phase the platform can time ended so far
	// (Capabilities.Phases): creation-time experiments read them.
	Timings() Timings
	// NetNSPath is the path of its network namespace (/proc/<pid>/ns/net),
	// which ctrbench enters to wire links into it on a platform that
	// declares Capabilities.Net.Wireable; "" when it has none ctrbench can
	// enter (a virtual machine's network is its guest's) or has exited.
	NetNSPath() string
}

// Publisher is an instance whose engine published its server's port on
// the machine (network published): Published is that address and port,
// "HOST:PORT", once it runs; "" when nothing was published.
type Publisher interface {
	Published() string
	// PublishedPorts are every port it published, "6379/tcp" →
	// "HOST:PORT" (the agent's too).
	PublishedPorts() map[string]string
}

// Fronted is a Publisher whose front (a Kubernetes Service) carries
// traffic only some time after Start returns (when every node's proxy has
// written its rules): Probe is an address through the same front, to the
// server's probe port (invocation.Agent.ProbePort, which the platform
// sets), that a client connects to until one is accepted before its
// workload begins (invocation.Agent.WaitConnect). "" when there is none.
type Fronted interface {
	Publisher
	Probe() string
}

// ProbePort is the port a fronted server accepts probes on, in its own
// namespace.
const ProbePort = 15299

// Clock records when an instance's phases ended, as its platform sees
// them; safe for concurrent use. An instance embeds one: its Timings
// method is Instance.Timings.
type Clock struct {
	mu sync.Mutex
	t  Timings
}

// NewClock starts a clock at the moment Start was called.
func NewClock(requested time.Time) *Clock {
	return &Clock{t: Timings{Requested: requested, At: map[vocab.Phase]time.Time{}}}
}

// Mark records now as the end of phase ph; a phase marked already keeps
// its first time.
func (c *Clock) Mark(ph vocab.Phase) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.t.At[ph]; !ok {
		c.t.At[ph] = time.Now()
	}
}

// MarkAt records at as the end of phase ph, when a watch saw it then; a
// zero time, or a phase marked already, is left.
func (c *Clock) MarkAt(ph vocab.Phase, at time.Time) {
	if at.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.t.At[ph]; !ok {
		c.t.At[ph] = at
	}
}

// Timings are the phases marked so far.
func (c *Clock) Timings() Timings {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Timings{Requested: c.t.Requested, At: maps.Clone(c.t.At)}
}

// EngineTimer is an instance whose engine keeps its own record of when
// its phases happened (Docker's events): a creation-time runner stores
// them beside the times the platform saw, after the instance is removed.
type EngineTimer interface {
	EngineTimings(ctx context.Context) (map[vocab.Phase]time.Time, error)
}

// Pinger is a platform with a service of its own (an engine) that can
// stop answering while the campaign runs: Ping says whether it answers.
// After a trial the platform failed or that timed out, the orchestrator
// pings; one that stays silent stops the campaign (a circuit breaker)
// instead of letting every later trial time out one by one.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Goer is an instance whose agent, started with WaitGo, can be told to
// begin its measured run (the go signal, SIGUSR1): copies of a workload
// begin together once all are up, however long their start took.
type Goer interface {
	Go(ctx context.Context) error
}

// Pod is an instance started with containers beside its own
// (InstanceSpec.Beside): Beside gives each, in their order, as an Instance
// of its own — its output, its exit, Stop for its agent alone. Removing
// the pod removes them; their own Remove does nothing.
type Pod interface {
	Beside() []Instance
}

// Seer is an instance whose platform saw more of its placement than the
// agent inside can (a nested child's parent: its network, its limits read
// from the host's cgroups); the trial records it beside what the agent saw.
type Seer interface {
	Seen() map[string]string
}

// Keys a platform's Seen records for an instance of a user's image: the
// image as the file named it and its ID (the config digest, sha256:…).
const (
	SeenImage   = "image"
	SeenImageID = "image.id"
)

// Holder is how a platform holds network namespaces for emulated hosts
// (Capabilities.Net.Holder): the lab adopts them as the hosts' own, and
// an instance given one of them as InstanceSpec.NetNS (by the lab's path
// for it) joins it.
type Holder interface {
	// HoldNamespace has p, a prepared platform of the driver that
	// declares the Holder, make a network namespace with loopback only,
	// held until Close, and returns its path (/proc/<pid>/ns/net) for the
	// lab to adopt. host (1-based) names it in the platform's objects.
	HoldNamespace(ctx context.Context, p Platform, host int) (string, error)
}

// Wired is an instance told the address the lab wired its namespace with
// (Provision.Wire), for what it routes there: a nested parent on Open
// vSwitch routes the machine to its inner bridge through it.
type Wired interface {
	Wired(ip string) error
}

// SaveImage writes ref, an image an engine holds, to a temporary archive
// file and returns its path (see Setup.Save).
type SaveImage func(ctx context.Context, ref string) (string, error)

// Saver is s.Save, or, when it is nil, one that says the image must be
// given as an archive: what a platform that unpacks images passes to
// userimage.OpenSource.
func (s Setup) Saver() SaveImage {
	if s.Save != nil {
		return s.Save
	}
	return func(_ context.Context, ref string) (string, error) {
		return "", fmt.Errorf("no engine to read image %s from here: give it as image_archive", ref)
	}
}

// Setup tells a platform what a campaign will need before the first trial.
type Setup struct {
	CampaignID string
	Labels     map[string]string // to put on every created object
	Networks   []vocab.Network   // network modes the campaign asks of this platform
	Tools      []string          // external binaries the workloads need (for images)
	Storages   []vocab.Storage   // storage levels the campaign uses on this platform
	// Options are the levels of the platform's own factors the campaign
	// uses (Capabilities.Own.Factors), per factor.
	Options  map[string][]string
	Progress io.Writer // human-readable notes (image build, network creation)
	// Hosts is the most nodes a cell asks of a cluster platform
	// (Capabilities.Cluster); 1 otherwise.
	Hosts int
	// CgroupParent, when set, is a cgroup path below the root (e.g.
	// "ctrbench/<campaign>/machine") that every instance is placed under:
	// the experiment's emulated machine size, limits set by the caller.
	CgroupParent string
	// Spans are what the campaign's cells ask of a cluster platform's
	// nodes (Capabilities.Cluster): a role's own factors' levels with its
	// cell's nodes, so the platform can refuse, before the first trial,
	// levels that fewer nodes than that can give.
	Spans []Span
	// Delays: a cell delays, jitters or loses packets on the links
	// between a cluster platform's nodes (Cluster.Delays): what does so
	// is put on every link before the first trial, so every cell of the
	// campaign crosses the same path.
	Delays bool
	// Images are the users' images the campaign's instances run from on
	// this platform (InstanceSpec.Image), to bring there once.
	Images []Image
	// Save writes an image an engine holds (an Image with a Ref and no
	// Archive) to an archive file the caller removes: the orchestrator
	// hands over the engine's, so a platform that unpacks images (host
	// processes, LXC, virtual machines) reads users' images without
	// talking to an engine itself. Nil: only archives can be read.
	Save SaveImage
	// Subnets is the pool every address the platform configures comes
	// from (its bridges, its engine's networks, a swarm's overlays, inner
	// engines' bridges), laid out by package subnets; zero: the default.
	Subnets subnets.Pool
}

// Span is what cells ask of a cluster's nodes: that many nodes that give
// the levels of the platform's own factors.
type Span struct {
	Options map[string]string
	Hosts   int
}

// Equal reports whether s and o ask the same.
func (s Span) Equal(o Span) bool { return s.Hosts == o.Hosts && maps.Equal(s.Options, o.Options) }

// Notes is where a platform writes its human-readable notes: Progress,
// or nowhere.
func (s Setup) Notes() io.Writer {
	if s.Progress == nil {
		return io.Discard
	}
	return s.Progress
}

// Serial is a platform whose instances must not end together on the
// engine it drives: a Docker Engine whose libnetwork deadlocks when many
// containers leave their networks at once (engine.EndsTogetherDeadlock).
// It is a fact of the engine in use, read when the platform is prepared,
// never of every engine: a trial's agents then wait after their result
// (invocation.Agent.Linger) and are removed one after another.
type Serial interface {
	EndOneAtATime() bool
}

// EndOneAtATime reports whether p's instances must end one at a time.
func EndOneAtATime(p Platform) bool {
	s, ok := p.(Serial)
	return ok && s.EndOneAtATime()
}

// ErrUnresponsive is the cause of a context cancelled because a
// platform's service stopped answering (the orchestrator's watchdog): a
// clean-up under it does not wait for the service.
var ErrUnresponsive = errors.New("the platform's service stopped answering")

// Platform starts instances.
type Platform interface {
	Name() string
	// Prepare creates campaign-wide resources (images, networks).
	Prepare(ctx context.Context, s Setup) error
	// Start launches one agent. The returned instance is running.
	Start(ctx context.Context, spec InstanceSpec) (Instance, error)
	// HostAddr is the host's address as seen from an instance on the given
	// network, for a client in that network reaching a server in the host's
	// namespace; "127.0.0.1" for Host.
	HostAddr(network vocab.Network) string
	// Close removes campaign-wide resources made by Prepare.
	Close(ctx context.Context) error
	// Info describes the platform for the campaign's environment record
	// (versions, image ID, network subnet...).
	Info() map[string]string
}
