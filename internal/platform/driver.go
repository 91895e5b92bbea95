package platform

import (
	"time"

	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Capabilities are what a platform declares it can do. Validation, the
// resolver and the runners ask them; none of them knows a platform by name.
// The plain facts every driver declares are fields; how its instances get
// their networks (Net), its own placement factors (Own) and whether it
// brings its own nodes (Cluster) are parts.
type Capabilities struct {
	// Networks are the modes the platform provides itself, on the machine
	// (not between emulated hosts): Docker's host, bridge and default
	// bridge. A platform without a namespace of its own lists Host only.
	Networks []vocab.Network
	// Net is how an instance gets the other modes: the facts the one
	// Provision rule reads.
	Net Net
	// Storages are the storage levels it can give an instance.
	Storages []vocab.Storage
	// OwnCgroup: every instance has a cgroup of its own, so its cgroup
	// counters are its own even without limits.
	OwnCgroup bool
	// Limits: it applies cgroup limits (cpus, cpuset, memory, block I/O)
	// and places instances under an emulated machine's cgroup.
	Limits bool
	// NoLimits are the limit factors (cpuset, blkio_weight, read_bps,
	// write_bps…) a platform with Limits cannot apply, with why.
	NoLimits map[string]string
	// Phases it can time (Instance.Timings).
	Phases []vocab.Phase
	// StartStop is roughly how long an instance takes to start and stop
	// here: only for the estimate a dry run prints (0: 2 s).
	StartStop time.Duration
	// Tools: instances see only the tools the platform brought (an image),
	// so it needs Setup.Tools; a host process sees the machine's.
	Tools bool
	// UserImages: it runs an instance from a user's image
	// (InstanceSpec.Image), the agent put into it.
	UserImages bool
	// Pods: an instance is a pod, and agents can run beside its own in
	// containers of their own (InstanceSpec.Beside): its network
	// namespace, node and life, their own limits (packaging same-pod).
	Pods bool
	// Own are the placement factors only this platform understands; zero
	// for none.
	Own Own
	// Cluster, when set, says the platform brings a cell's hosts itself
	// (ClusterOf, the one place the generic code asks it).
	Cluster Cluster
}

// Net is how a platform's instances get their networks beyond the modes
// it provides itself (Capabilities.Networks): the facts Provision, the one
// network rule, reads.
type Net struct {
	// OwnNetNS: every instance has a network namespace of its own. Without
	// one an instance is a process in the machine's namespace, or in an
	// emulated host's (InstanceSpec.NetNS), and other network modes reach
	// it only from their host side.
	OwnNetNS bool
	// Wireable: ctrbench can wire an instance's namespace itself (its
	// Instance.NetNSPath, which platformtest checks): the modes the network lab builds (macvlan, Open vSwitch,
	// the bridge and overlays between emulated hosts) are available.
	Wireable bool
	// JoinNetwork: an instance can join another's namespace
	// (ShareNetworkWith), which is the loopback network.
	JoinNetwork bool
	// Holder, when set, holds emulated hosts' network namespaces for the
	// platform, so an instance can share its host's (network host with
	// hosts ≥ 2): its instances join a namespace by instance, not by path,
	// so the lab adopts the ones it holds as the hosts' own.
	Holder Holder
	// JoinsNSPath: an instance can run in a network namespace given by
	// path (InstanceSpec.NetNS): it shares an emulated host's (network
	// host with hosts ≥ 2) as the lab made it.
	JoinsNSPath bool
	// Plugs are the lab's modes whose network the platform plugs an
	// instance's own link (a virtual machine's tap) into as it starts
	// (InstanceSpec.Plug), configuring the address the lab gives it: for
	// instances with a network stack beyond a namespace, which the lab
	// cannot wire from outside. Where the lab takes a link (on the
	// machine, between emulated hosts) is vocab.Network.TakesLinks.
	Plugs []vocab.Network
	// Outer, when set, is the lab mode on the machine the lab wires an
	// instance's outer namespace into, by the platform's own factors,
	// whatever the cell's mode, which is then the instance's inside it (a
	// nested parent on Open vSwitch, its child on the inner engine's
	// bridge: Provision's Platform the cell's mode, its Wire this); ""
	// for none.
	Outer func(options map[string]string) vocab.Network
	// Refuse, when set, says why the platform cannot give a network mode
	// it lists on this machine (a kernel feature missing); nil error when
	// it can. Validation asks it, so the file is refused before anything
	// starts.
	Refuse func(n vocab.Network) error
}

// Own are a platform's own placement factors and what they change.
type Own struct {
	// Factors are placement factors only this platform understands (the
	// nested platform's children per parent, its parents' network and
	// limits). Validation asks the drivers for them; an instance gets the
	// cell's levels, defaults filled, in InstanceSpec.Options.
	Factors []Factor
	// Seen, when set, is the network an instance is really on as the
	// machine sees it, given the mode the cell asks and the platform's own
	// factors: a nested child on its parent's network ("host" inside the
	// parent) is where its parent is. Nil: the mode asked.
	Seen func(n vocab.Network, options map[string]string) vocab.Network
	// Combine, when set, refuses a network mode with the platform's own
	// factors' levels that it cannot give, saying why.
	Combine func(n vocab.Network, options map[string]string) error
}

// Factor is a placement factor of one platform.
type Factor struct {
	Name    string // as experiment files write it: "children", "parent.network"
	Default string // the level when a cell does not set it
	Doc     string // what it means and its levels, for documentation and messages
	// Check validates a level and returns its canonical form.
	Check func(level string) (string, error)
}

// OneOf is the Check of a factor whose levels are levels, spelt as they
// are.
func OneOf(levels ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		if slices.Contains(levels, v) {
			return v, nil
		}
		return "", fmt.Errorf("want one of %s", strings.Join(levels, ", "))
	}
}

// FactorOf returns the first driver that declares factor name, and the
// factor (drivers sharing a factor declare the same one).
func FactorOf(name string) (Driver, Factor, bool) {
	for _, d := range Drivers() {
		for _, f := range d.Caps.Own.Factors {
			if f.Name == name {
				return d, f, true
			}
		}
	}
	return Driver{}, Factor{}, false
}

// Declares reports whether d declares its own factor name.
func (d Driver) Declares(name string) bool {
	for _, f := range d.Caps.Own.Factors {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Declarers lists the drivers that declare factor name (the OCI runtime
// is docker's and podman's), in Drivers' order.
func Declarers(name string) []string {
	var out []string
	for _, d := range Drivers() {
		if d.Declares(name) {
			out = append(out, d.Name)
		}
	}
	return out
}

// Options are the levels of d's own factors in a cell's factors, each
// defaulted when the cell does not set it; nil when d declares none.
func (d Driver) Options(factors map[string]string) map[string]string {
	if len(d.Caps.Own.Factors) == 0 {
		return nil
	}
	out := make(map[string]string, len(d.Caps.Own.Factors))
	for _, f := range d.Caps.Own.Factors {
		out[f.Name] = f.Default
		if v, ok := factors[f.Name]; ok {
			out[f.Name] = v
		}
	}
	return out
}

// Provision is how an instance gets the network mode a cell asks for.
type Provision struct {
	// Platform is what to ask the platform for (InstanceSpec.Network).
	Platform vocab.Network
	// Wire is the mode the network lab attaches the instance to after it
	// starts; "" when the platform provides the network itself.
	Wire vocab.Network
	// Join: the instance joins the first instance of its pair (loopback).
	Join bool
	// HostNS: the instance runs in its emulated host's namespace
	// (InstanceSpec.NetNS).
	HostNS bool
	// Plug is the lab's mode the platform plugs the instance's own link
	// into as it starts (InstanceSpec.Plug); "" for none.
	Plug vocab.Network
}

// Provision decides how an instance of the platform gets network mode n
// in a cell with hosts emulated hosts (1: the machine alone). It is the one place that rule is written: validation reports its
// error, the resolver uses its answer. A platform without a namespace of its
// own always runs in its host's; which other modes it can talk across is a
// matter of the whole chain, which validation checks.
func (d Driver) Provision(n vocab.Network, hosts int) (Provision, error) {
	return d.ProvisionWith(n, hosts, nil)
}

// ProvisionWith is Provision for an instance with the platform's own
// factors at options' levels (Capabilities.Net.Outer).
func (d Driver) ProvisionWith(n vocab.Network, hosts int, options map[string]string) (Provision, error) {
	p, ok, err := d.provision(n, hosts)
	if ok && err == nil && d.Caps.Net.Outer != nil {
		if w := d.Caps.Net.Outer(options); w != "" {
			if hosts > 1 || !w.Lab(1) {
				return Provision{}, fmt.Errorf("platform %s wires its instances' outer namespace into %s on the machine only, not between emulated hosts (hosts %d)", d.Name, w, hosts)
			}
			p.Wire = w
		}
	}
	if err == nil && !ok {
		err = fmt.Errorf("platform %s does not offer network %s here (hosts %d); it offers %s", d.Name, n, hosts, d.offered(hosts))
	}
	return p, err
}

// provision is Provision; ok is false, with no error, when the platform
// lacks the mode.
func (d Driver) provision(n vocab.Network, hosts int) (Provision, bool, error) {
	p, ok, err := d.rules(n, hosts)
	if ok && err == nil && d.Caps.Net.Refuse != nil {
		if err := d.Caps.Net.Refuse(n); err != nil {
			return Provision{}, false, err
		}
	}
	return p, ok, err
}

// rules are Provision's rules, before the platform's Refuse: a process
// has the host's network; a platform that brings its nodes gives the
// modes it lists between them; any other gives its own modes on the
// machine, loopback by joining, and what the lab wires.
func (d Driver) rules(n vocab.Network, hosts int) (Provision, bool, error) {
	c := d.Caps.Net
	if !c.OwnNetNS {
		return Provision{Platform: vocab.Host, HostNS: hosts > 1}, true, nil
	}
	if cl, ok := ClusterOf(d.Caps); ok {
		switch max := cl.MaxNodes(); {
		case max > 0 && hosts > max:
			return Provision{}, false, fmt.Errorf("platform %s gives a cell at most %d nodes (hosts %d)", d.Name, max, hosts)
		case !slices.Contains(d.Caps.Networks, n):
			return Provision{}, false, nil
		}
		return Provision{Platform: n}, true, nil
	}
	if n.ClusterOnly() {
		return Provision{}, false, nil
	}
	switch {
	case n.NeedsHosts() && hosts < 2:
		return Provision{}, false, fmt.Errorf("network %s joins emulated hosts: it needs hosts 2 or more", n)
	case n == vocab.PublishedProxy && hosts > 1 && d.gives(vocab.Published, hosts):
		return Provision{}, false, fmt.Errorf("network %s is on the machine itself, not between emulated hosts (hosts %d): a client on another host never reaches an engine's userland proxy — the engine's DNAT rules take its connection first, proxy on or off — so %s is that path: use it there", n, hosts, vocab.Published)
	case n.MachineOnly() && hosts > 1:
		return Provision{}, false, fmt.Errorf("network %s is on the machine itself, not between emulated hosts (hosts %d)%s", n, hosts, orBetween(": use", d.between(hosts), " there"))
	case n == vocab.Host && hosts > 1 && (c.Holder != nil || c.JoinsNSPath):
		return Provision{Platform: vocab.Host, HostNS: true}, true, nil
	case n == vocab.Host && hosts > 1:
		return Provision{}, false, fmt.Errorf("a %s cannot share an emulated host's namespace (network host with hosts %d): use %s on the hosts' network%s", d.Noun, hosts, hostNSPlatforms(), orBetween(", or network", d.between(hosts), ""))
	case n == vocab.Loopback && c.JoinNetwork:
		return Provision{Platform: vocab.None, Join: true}, true, nil
	case hosts <= 1 && slices.Contains(d.Caps.Networks, n):
		return Provision{Platform: n}, true, nil
	case slices.Contains(c.Plugs, n) && n.TakesLinks(hosts > 1):
		return Provision{Platform: n, Plug: n}, true, nil
	case c.Wireable && n.Lab(hosts):
		return Provision{Platform: vocab.None, Wire: n}, true, nil
	}
	return Provision{}, false, nil
}

// gives reports whether d gives an instance network mode n with hosts
// emulated hosts.
func (d Driver) gives(n vocab.Network, hosts int) bool {
	_, ok, err := d.provision(n, hosts)
	return ok && err == nil
}

// between lists the modes that join d's instances across hosts emulated
// hosts (hosts ≥ 2), but the hosts' own namespaces (host) and one
// container's (loopback): what a mode of the machine alone becomes there.
func (d Driver) between(hosts int) string {
	var out []string
	for _, n := range vocab.Networks {
		// A mode of the machine alone is refused between hosts with this
		// list: asking for it here would never end.
		if n != vocab.Host && n != vocab.Loopback && !n.MachineOnly() && d.gives(n, hosts) {
			out = append(out, string(n))
		}
	}
	return strings.Join(out, ", ")
}

// orBetween is a message's words before and after the modes between
// emulated hosts it suggests, or nothing to suggest when there are none.
func orBetween(before, modes, after string) string {
	if modes == "" {
		return ""
	}
	return before + " " + modes + after
}

// Processes reports whether d's instances are processes in their host's
// namespace (the machine's, or an emulated host's): no namespace of their
// own, on hosts of ctrbench's.
func (d Driver) Processes() bool {
	_, cluster := ClusterOf(d.Caps)
	return !d.Caps.Net.OwnNetNS && !cluster
}

// hostNSPlatforms names the registered platforms whose instances run in
// an emulated host's namespace: processes, and containers that share it.
func hostNSPlatforms() string {
	var out []string
	for _, d := range Drivers() {
		if d.Processes() || d.Caps.Net.Holder != nil || d.Caps.Net.JoinsNSPath {
			out = append(out, "platform "+d.Name)
		}
	}
	if len(out) == 0 {
		return "a process"
	}
	return strings.Join(out, " or ")
}

// offered lists the modes Provision accepts with hosts emulated hosts.
func (d Driver) offered(hosts int) string {
	var out []string
	for _, n := range vocab.Networks {
		if _, ok, err := d.provision(n, hosts); ok && err == nil && (d.Caps.Net.OwnNetNS || n == vocab.Host) {
			out = append(out, string(n))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Config is what every driver's constructor gets.
type Config struct {
	// Binary is the static ctrbench executable the agents run (copied into
	// images, or run as a process).
	Binary string
	// Engine is an existing engine a cluster platform drives (a Docker
	// Swarm manager); zero when it builds its cluster itself.
	Engine Engine
}

// Engine names a Docker Engine as Docker's CLI does: an address
// (DOCKER_HOST, --host), or a context of the CLI's, with TLS options.
type Engine struct {
	Host      string // "tcp://manager:2376", "unix:///path", "ssh://…" is not supported
	Context   string // a Docker CLI context name (DOCKER_CONTEXT, --context)
	TLSVerify bool
	TLSCACert string
	TLSCert   string
	TLSKey    string
}

// IsZero reports whether no engine is named.
func (e Engine) IsZero() bool { return e == Engine{} }

// Driver is one platform: its name, what it can do and how to make one.
type Driver struct {
	Name    string
	Summary string // one line for documentation and messages
	// Noun is what one instance is called in messages: "host process",
	// "Docker container".
	Noun string
	// Rank orders platforms in lists and messages: the bare-metal
	// reference first, then by how much sits between workload and machine.
	Rank int
	Caps Capabilities
	// Open makes the platform for one campaign. It checks that what the
	// platform drives (an engine, a daemon) answers, with an error that
	// says how to start it.
	Open func(ctx context.Context, cfg Config) (Platform, error)
	// Clean removes what a killed run left behind (`ctrbench clean`); nil
	// when nothing can outlive a run (processes die with ctrbench).
	Clean func(ctx context.Context, o CleanOptions) (Cleaned, error)
}

// CleanOptions say what `ctrbench clean` removes.
type CleanOptions struct {
	Campaign string // only this campaign's objects; "" for all of ctrbench's
	Force    bool   // also those of a campaign whose ctrbench still runs
	Images   bool   // also cached images
	Engine   Engine // a cluster platform's existing engine, when named
}

// Cleaned is what a driver's Clean did.
type Cleaned struct {
	Removed []string // "container ctrbench-…", "network ctrbench-…"
	Kept    []string // objects of a campaign whose ctrbench still runs
	// Skipped says why nothing was looked at (the engine does not answer);
	// "" when it was.
	Skipped string
}

var (
	mu      sync.RWMutex
	drivers = map[string]Driver{}
)

// Register adds a driver; a platform package calls it from init. It panics
// on a duplicate or incomplete driver, a programming error.
func Register(d Driver) {
	mu.Lock()
	defer mu.Unlock()
	if d.Name == "" || d.Open == nil {
		panic("platform: a driver needs a name and Open")
	}
	if _, dup := drivers[d.Name]; dup {
		panic("platform: duplicate driver " + d.Name)
	}
	if !slices.Contains(d.Caps.Storages, vocab.Layer) {
		panic("platform " + d.Name + ": every platform has its own filesystem (storage layer)")
	}
	drivers[d.Name] = d
}

// Unregister removes a driver; tests that register a toy platform use it.
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	delete(drivers, name)
}

// Lookup returns the driver called name.
func Lookup(name string) (Driver, bool) {
	mu.RLock()
	defer mu.RUnlock()
	d, ok := drivers[name]
	return d, ok
}

// Drivers lists the registered drivers by rank, then name.
func Drivers() []Driver {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Driver, 0, len(drivers))
	for _, d := range drivers {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank < out[j].Rank
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names lists the registered platforms in Drivers' order.
func Names() []string {
	var out []string
	for _, d := range Drivers() {
		out = append(out, d.Name)
	}
	return out
}

// NamesWhere lists, in Drivers' order, the platforms whose driver has
// what ok asks.
func NamesWhere(ok func(Driver) bool) []string {
	var out []string
	for _, d := range Drivers() {
		if ok(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// Open makes one platform of each name, for one campaign; on an error it
// closes those already made.
func Open(ctx context.Context, names []string, cfg Config) (map[string]Platform, error) {
	out := map[string]Platform{}
	for _, n := range names {
		d, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("no platform %q; platforms: %s", n, strings.Join(Names(), ", "))
		}
		p, err := d.Open(ctx, cfg)
		if err != nil {
			for _, q := range out {
				_ = q.Close(context.WithoutCancel(ctx))
			}
			return nil, err
		}
		out[n] = p
	}
	return out, nil
}
