package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/tailbuf"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// DataMount is where a volume or tmpfs for disk workloads is mounted.
const DataMount = "/data"

// stderrTail is how much of an agent's stderr Exit keeps.
const stderrTail = 8 << 10

// Start implements platform.Platform. The container is attached before it
// starts, so no output is lost, and is never auto-removed, so its state can
// be read after exit; Remove deletes it.
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	if err := p.ensureStore(ctx, spec.Options[FactorImageStore]); err != nil {
		return nil, err
	}
	return p.start(ctx, spec, nil)
}

// start starts the container; cmd, when set, replaces the agent's command
// line (the package's tests run a stand-in binary with commands of its own).
func (p *Platform) start(ctx context.Context, spec platform.InstanceSpec, cmd []string) (platform.Instance, error) {
	return p.startWith(ctx, spec, func(c *engine.ContainerSpec) {
		if cmd != nil {
			c.Cmd = cmd
		}
	})
}

// startWith starts a container as Start does; tweak may change its
// specification before it is created (another image and command, more
// privileges, mounts).
func (p *Platform) startWith(ctx context.Context, spec platform.InstanceSpec, tweak func(*engine.ContainerSpec)) (platform.Instance, error) {
	requested := time.Now()
	camp, err := p.current()
	if err != nil {
		return nil, err
	}
	cs, ipOn, err := containerSpec(camp, spec, p.nsPath)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{SeenImageStore: camp.daemon.ImageStore()}
	if spec.Image != nil {
		seen[platform.SeenImage], seen[platform.SeenImageID] = spec.Image.String(), camp.users[spec.Image.Key()].BaseID
	}
	if tweak != nil {
		tweak(&cs)
	}
	ctx, cancel := engine.WithTimeout(ctx, startTimeout)
	defer cancel()
	inst, err := p.create(ctx, cs, requested)
	if err != nil {
		return nil, err
	}
	inst.seen = seen
	inst.control = vocab.Port{Number: spec.Agent.Port, Proto: "tcp"}.String()
	if err := p.run(ctx, inst, cs.Network, ipOn); err != nil {
		inst.Remove(ctx)
		return nil, err
	}
	return inst, nil
}

// containerSpec is the container an instance of the campaign is: its
// image and agent, labels, network, limits and storage; ipOn is the
// network whose address is the instance's ("" for none).
func containerSpec(camp prepared, spec platform.InstanceSpec, nsPath bool) (engine.ContainerSpec, string, error) {
	mode, ipOn, err := networkMode(camp, spec, nsPath)
	if err != nil {
		return engine.ContainerSpec{}, "", err
	}
	res, err := campaignResources(camp, spec)
	if err != nil {
		return engine.ContainerSpec{}, "", err
	}
	tag := camp.image.Tag
	var env []string
	if spec.Image != nil {
		u, ok := camp.users[spec.Image.Key()]
		if !ok {
			return engine.ContainerSpec{}, "", fmt.Errorf("instance %s: image %s not prepared (Setup.Images lacks it)", spec.Name, spec.Image)
		}
		tag, env = u.Tag, invocation.HandOver(u.WorkingDir, u.Command)
	}
	cs := engine.ContainerSpec{
		Name:      spec.Name,
		Image:     tag,
		Env:       env,
		Labels:    owner.Labels(camp.id, camp.labels, spec.Labels),
		Network:   mode,
		Runtime:   spec.Options[FactorRuntime],
		Resources: res,
		Attach:    true,
	}
	inv := spec.Agent
	switch spec.Storage {
	case "", vocab.Layer:
		// The agent writes in /tmp: the container's writable layer.
	case vocab.Volume:
		if camp.volume == "" {
			return engine.ContainerSpec{}, "", fmt.Errorf("instance %s: volume not prepared (Setup.Storages lacks %q)", spec.Name, vocab.Volume)
		}
		cs.Volume, cs.VolumeTarget = camp.volume, DataMount
		inv.DataDir = DataMount
	case vocab.Tmpfs:
		cs.Tmpfs = map[string]string{DataMount: "rw,exec"}
		inv.DataDir = DataMount
	default:
		return engine.ContainerSpec{}, "", fmt.Errorf("instance %s: docker platform does not support storage %q", spec.Name, spec.Storage)
	}
	if spec.Network.Publishes() {
		if inv.Port == 0 {
			return engine.ContainerSpec{}, "", fmt.Errorf("instance %s: network %s publishes the port its server listens on, and it was given none", spec.Name, spec.Network)
		}
		// The bridge's own address (the engine's NAT rules), or loopback
		// (its userland proxy); never every address of the machine, which
		// would open the port on its real interface.
		hostIP := camp.bridge.Gateway
		if spec.Network == vocab.PublishedProxy {
			hostIP = "127.0.0.1"
		}
		cs.Publish = []engine.PortBinding{{Port: inv.Port, Proto: "tcp", HostIP: hostIP}}
		for _, more := range spec.Publish {
			cs.Publish = append(cs.Publish, engine.PortBinding{Port: more.Number, Proto: more.Proto, HostIP: hostIP})
		}
		if err := sharePortNumbers(cs.Publish); err != nil {
			return engine.ContainerSpec{}, "", fmt.Errorf("instance %s: %w", spec.Name, err)
		}
	}
	cs.Cmd, cs.Env = inv.Args(), append(cs.Env, inv.Env()...)
	return cs, ipOn, nil
}

// networkMode is the engine's network mode of an instance, and the
// network whose address is the instance's ("" for none); nsPath: the
// engine joins a namespace by path (WithNamespacePaths).
func networkMode(camp prepared, spec platform.InstanceSpec, nsPath bool) (mode, ipOn string, err error) {
	netName := camp.network(spec.Network).Name
	switch {
	case spec.ShareNetworkWith != "":
		return "container:" + spec.ShareNetworkWith, "", nil
	case spec.NetNS != "": // an emulated host's: by path, or held by a container of ours
		if spec.Network != vocab.Host && spec.Network != "" {
			return "", "", fmt.Errorf("instance %s: an emulated host's namespace is shared on network host, not %s", spec.Name, spec.Network)
		}
		if nsPath {
			return "ns:" + spec.NetNS, "", nil
		}
		in, err := camp.heldAt(spec.NetNS)
		if err != nil {
			return "", "", fmt.Errorf("instance %s: %w", spec.Name, err)
		}
		return "container:" + in.id, "", nil
	case spec.Network == vocab.Host || spec.Network == "":
		return "host", netName, nil
	case spec.Network == vocab.Bridge || spec.Network.Publishes() || spec.Network.GatewayMode() != "":
		if netName == "" {
			return "", "", fmt.Errorf("instance %s: %s network not prepared (Setup.Networks lacks it)", spec.Name, spec.Network)
		}
		return netName, netName, nil
	case spec.Network == vocab.BridgeDefault:
		return "bridge", "bridge", nil
	case spec.Network == vocab.None:
		return "none", "", nil
	}
	return "", "", fmt.Errorf("instance %s: docker platform does not support network %q", spec.Name, spec.Network)
}

// campaignResources are an instance's limits, block I/O limits on the
// daemon's data root's disk, below the campaign's cgroup parent.
func campaignResources(camp prepared, spec platform.InstanceSpec) (engine.Resources, error) {
	res, err := resources(spec.Limits)
	if err != nil {
		return res, fmt.Errorf("instance %s: %w", spec.Name, err)
	}
	if spec.Limits.ReadBps > 0 || spec.Limits.WriteBps > 0 {
		root := camp.daemon.RootDir
		node, _, err := sysinfo.BlockDevice(root)
		if err != nil {
			return res, fmt.Errorf("instance %s: block I/O limits: the daemon's data root %s: %w", spec.Name, root, err)
		}
		if spec.Limits.ReadBps > 0 {
			res.ReadBps = []engine.Throttle{{Path: node, Rate: uint64(spec.Limits.ReadBps)}}
		}
		if spec.Limits.WriteBps > 0 {
			res.WriteBps = []engine.Throttle{{Path: node, Rate: uint64(spec.Limits.WriteBps)}}
		}
	}
	res.CgroupParent = camp.cgParent
	return res, nil
}

// create creates the container. The create itself is not cancelled by
// Ctrl-C: a request abandoned in flight can still create the container in
// the daemon, and then no one would know its ID to remove it. It completes
// (bounded by the start timeout) and is removed by the caller when ctx has
// ended meanwhile.
func (p *Platform) create(ctx context.Context, cs engine.ContainerSpec, requested time.Time) (*instance, error) {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer ccancel()
	id, err := p.eng.CreateContainer(cctx, cs)
	if err != nil {
		return nil, fmt.Errorf("creating container %s: %w", cs.Name, err)
	}
	return &instance{
		eng:     p.eng,
		hostPID: p.eng.LocalPIDs(),
		id:      id,
		name:    cs.Name,
		stdout:  newBuffer(),
		stderr:  tailbuf.New(stderrTail),
		done:    make(chan struct{}),
		timings: platform.Timings{Requested: requested, At: map[vocab.Phase]time.Time{vocab.Create: time.Now()}},
	}, nil
}

// run attaches to the created container, starts it and reads its first
// process and its address on network ipOn; the caller removes it on an
// error.
func (p *Platform) run(ctx context.Context, inst *instance, mode, ipOn string) error {
	name := inst.name
	if err := ctx.Err(); err != nil {
		close(inst.done)
		inst.stdout.CloseWithError(io.EOF)
		return fmt.Errorf("starting container %s: %w", name, err)
	}
	att, err := p.eng.Attach(ctx, inst.id)
	if err != nil {
		close(inst.done)
		inst.stdout.CloseWithError(io.EOF)
		return fmt.Errorf("attaching to container %s: %w", name, err)
	}
	inst.conn = att
	go inst.demux()

	if err := p.eng.StartContainer(ctx, inst.id); err != nil {
		return fmt.Errorf("starting container %s: %w", name, err)
	}
	inst.mark(vocab.Start)
	c, err := p.eng.InspectContainer(ctx, inst.id)
	if err != nil {
		return fmt.Errorf("inspecting container %s: %w", name, err)
	}
	if c.Known {
		inst.pid = c.Pid
	}
	inst.ports = c.Published
	if len(c.Published) > 0 && inst.hostPID {
		go inst.watchProxies(c.Published)
	}
	if ipOn != "" && mode != "host" {
		inst.ip = c.IPs[ipOn]
		// A container that exits at once has no address any more; only a
		// running one without an address is a fault.
		if inst.ip == "" && c.Known && c.Running {
			return fmt.Errorf("container %s has no address on network %s", name, ipOn)
		}
	}
	return nil
}

// resources maps limits to Docker's: CPUs to a CFS quota (NanoCPUs), and
// the memory limit also as the memory+swap limit so swap cannot stretch it.
func resources(l platform.Limits) (engine.Resources, error) {
	var r engine.Resources
	if l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return r, fmt.Errorf("invalid CPU limit %v", l.CPUs)
	}
	if l.MemoryBytes < 0 {
		return r, fmt.Errorf("invalid memory limit %d", l.MemoryBytes)
	}
	r.NanoCPUs = int64(math.Round(l.CPUs * 1e9))
	r.BlkioWeight = l.BlkioWeight
	r.CpusetCpus = l.Cpuset
	r.PidsLimit = l.Pids
	if l.MemoryBytes > 0 {
		r.Memory = l.MemoryBytes
		r.MemorySwap = l.MemoryBytes
	}
	return r, nil
}

// instance is one agent container.
type instance struct {
	seen map[string]string // what Seen reports: the user's image it runs
	eng  *engine.Engine
	id   string
	name string
	ip   string
	// ports are what its engine published on the machine, "PORT/PROTO" →
	// "HOST:PORT"; control is its agent's port among them.
	control string
	ports   map[string]string
	pid     int // the container's first process, as its engine sees it
	host    int // the emulated host whose namespace it holds (HoldNamespace), else 0
	// hostPID: pid is the machine's (the engine is not nested).
	hostPID bool

	conn   *engine.Attachment
	stdout *buffer
	stderr *tailbuf.Buffer
	done   chan struct{} // closed when the output stream has ended

	mu      sync.Mutex
	removed bool
	timings platform.Timings // times as this client saw them
}

// Published implements platform.Publisher.
func (i *instance) Published() string { return i.ports[i.control] }

// PublishedPorts implements platform.Publisher.
func (i *instance) PublishedPorts() map[string]string { return maps.Clone(i.ports) }

// mark records when a phase ended, once.
func (i *instance) mark(ph vocab.Phase) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.markLocked(ph)
}

func (i *instance) markLocked(ph vocab.Phase) {
	if i.timings.At == nil {
		i.timings.At = map[vocab.Phase]time.Time{}
	}
	if _, ok := i.timings.At[ph]; !ok {
		i.timings.At[ph] = time.Now()
	}
}

// Go implements platform.Goer: the agent is signalled directly where its
// process is the machine's (microseconds, so many copies begin within a
// millisecond), else through the engine (tens of milliseconds each).
func (i *instance) Go(ctx context.Context) error {
	if i.hostPID && i.pid > 0 && syscall.Kill(i.pid, syscall.SIGUSR1) == nil {
		return nil
	}
	if err := i.eng.Signal(ctx, i.id, "SIGUSR1"); err != nil {
		return fmt.Errorf("instance %s: the go signal: %w", i.name, err)
	}
	return nil
}

// Pid is the container's first process as the host sees it (0 before it
// started).
func (i *instance) Pid() int { return i.pid }

// Timings implements platform.Instance.
func (i *instance) Timings() platform.Timings {
	i.mu.Lock()
	defer i.mu.Unlock()
	return platform.Timings{Requested: i.timings.Requested, At: maps.Clone(i.timings.At)}
}

// demux splits the attach stream. Stdout goes to an unbounded buffer, so a
// caller that waits before it reads cannot stall the container or lose the
// stderr that follows.
func (i *instance) demux() {
	defer close(i.done)
	err := i.conn.Demux(i.stdout, i.stderr)
	i.mu.Lock()
	removed := i.removed
	i.mu.Unlock()
	if !removed {
		i.mark(vocab.Exit) // the attach stream ends when the agent exits
	}
	if err == nil || removed {
		err = io.EOF
	}
	i.stdout.CloseWithError(err)
}

func (i *instance) Stdout() io.Reader { return i.stdout }
func (i *instance) IP() string        { return i.ip }

// NetNSPath implements platform.Instance: the container's network
// namespace, through its first process ("" when it has exited).
func (i *instance) NetNSPath() string {
	if i.pid <= 0 {
		return ""
	}
	return fmt.Sprintf("/proc/%d/ns/net", i.pid)
}

// Wait implements platform.Instance. It returns ctx's error when ctx ends
// first; the caller then calls Remove.
func (i *instance) Wait(ctx context.Context) (platform.Exit, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	status, msg, err := i.eng.WaitContainer(ctx, i.id)
	if err != nil {
		if ctx.Err() != nil {
			return platform.Exit{}, ctx.Err()
		}
		return platform.Exit{}, fmt.Errorf("waiting for container %s: %w", i.name, err)
	}
	i.mark(vocab.Exit)
	if msg != "" {
		return platform.Exit{}, fmt.Errorf("waiting for container %s: %s", i.name, msg)
	}
	code := int(status)
	// The attach stream ends just after the process; give in-flight output
	// a moment so Stderr is complete.
	select {
	case <-i.done:
	case <-time.After(drainTimeout):
	case <-ctx.Done():
	}
	exit := platform.Exit{Code: code, Stderr: i.stderr.String()}
	if code != 0 {
		ictx, icancel := engine.WithTimeout(context.WithoutCancel(ctx), engine.PingTimeout)
		defer icancel()
		c, err := i.inspectGone(ictx, code)
		if engine.Gone(err) && !i.removedByUs() {
			exit.Vanished = true
			exit.Stderr += fmt.Sprintf("\n[ctrbench: container %s was removed while it ran, by something else than ctrbench (docker rm -f?)]", i.name)
		}
		if err == nil && c.Known && c.OOMKilled {
			limit := ""
			if c.Configured && c.Memory > 0 {
				limit = fmt.Sprintf(" (memory limit %d bytes)", c.Memory)
			}
			exit.Stderr += fmt.Sprintf("\n[ctrbench: container %s was killed by the OOM killer%s]", i.name, limit)
		}
	}
	return exit, nil
}

// Remove implements platform.Instance: it kills the container if it still
// runs and deletes it. Calling it again, or after the container is gone,
// returns nil.
// Stop sends SIGTERM to the agent (PID 1 of the container, which handles
// it); a container that has exited already is fine.
func (i *instance) Stop(ctx context.Context) error {
	ctx, cancel := engine.WithTimeout(ctx, engine.CleanupTimeout)
	defer cancel()
	if err := i.eng.Signal(ctx, i.id, "SIGTERM"); err != nil && !engine.Gone(err) {
		return fmt.Errorf("instance %s: %w", i.name, err)
	}
	return nil
}

// inspectGone inspects the container after it exited with code; after a
// kill (128+9, 128+15) it looks again for a moment, as `docker rm -f`
// kills a container before it removes it.
func (i *instance) inspectGone(ctx context.Context, code int) (engine.ContainerState, error) {
	c, err := i.eng.InspectContainer(ctx, i.id)
	for tries := 0; err == nil && (code == 137 || code == 143) && tries < 20 && !i.removedByUs(); tries++ {
		select {
		case <-ctx.Done():
			return c, err
		case <-time.After(100 * time.Millisecond):
		}
		c, err = i.eng.InspectContainer(ctx, i.id)
	}
	return c, err
}

// removedByUs reports whether ctrbench removed the container (Remove).
func (i *instance) removedByUs() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.removed
}

func (i *instance) Remove(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.removed {
		return nil
	}
	ctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	if err := i.eng.RemoveContainer(ctx, i.id); err != nil {
		return fmt.Errorf("instance %s: %w", i.name, err)
	}
	i.removed = true
	i.markLocked(vocab.Remove)
	i.conn.Close()
	return nil
}

// buffer is an unbounded in-memory pipe: writes never block, reads block
// until data arrives or the writer closes it.
type buffer struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	err  error
}

func newBuffer() *buffer {
	b := &buffer{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, io.ErrClosedPipe
	}
	b.buf.Write(p)
	b.cond.Broadcast()
	return len(p), nil
}

// CloseWithError makes reads return err once the buffered data is read.
func (b *buffer) CloseWithError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
		b.cond.Broadcast()
	}
}

func (b *buffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.buf.Len() == 0 && b.err == nil {
		b.cond.Wait()
	}
	if b.buf.Len() > 0 {
		return b.buf.Read(p)
	}
	return 0, b.err
}

// engineActions are the container events that end a phase.
var engineActions = map[string]vocab.Phase{
	engine.ActionCreate: vocab.Create, engine.ActionStart: vocab.Start,
	engine.ActionDie: vocab.Exit, engine.ActionDestroy: vocab.Remove,
}

// EngineTimings implements platform.EngineTimer: the daemon's own
// timestamps of the container's create, start, die and destroy events,
// read back from its event log once the container is gone.
func (i *instance) EngineTimings(ctx context.Context) (map[vocab.Phase]time.Time, error) {
	i.mu.Lock()
	since, until := i.timings.Requested, time.Now()
	i.mu.Unlock()
	ctx, cancel := engine.WithTimeout(ctx, engine.CleanupTimeout)
	defer cancel()
	at, err := i.eng.ContainerEvents(ctx, i.id, since.Add(-time.Second), until)
	if err != nil {
		return nil, fmt.Errorf("instance %s: reading the engine's events: %w", i.name, err)
	}
	out := map[vocab.Phase]time.Time{}
	for action, t := range at {
		if ph, ok := engineActions[action]; ok {
			out[ph] = t
		}
	}
	return out, nil
}

// Seen implements platform.Seer: the user's image an instance runs from.
func (in *instance) Seen() map[string]string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.seen)
}
