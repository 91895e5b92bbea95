package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	cerrdefs "github.com/containerd/errdefs"
	"io"
	"maps"
	"math"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/blkiodev"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

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
	return p.start(ctx, spec, nil)
}

// start starts the container; cmd, when set, replaces the agent's command
// line (the package's tests run a stand-in binary with commands of its own).
func (p *Platform) start(ctx context.Context, spec platform.InstanceSpec, cmd []string) (platform.Instance, error) {
	return p.startWith(ctx, spec, func(cfg *container.Config, _ *container.HostConfig) {
		if cmd != nil {
			cfg.Cmd = cmd
		}
	})
}

// startWith starts a container as Start does; tweak may change its
// configuration before it is created (another image and command, more
// privileges, mounts).
func (p *Platform) startWith(ctx context.Context, spec platform.InstanceSpec, tweak func(*container.Config, *container.HostConfig)) (platform.Instance, error) {
	requested := time.Now()
	camp, err := p.current()
	if err != nil {
		return nil, err
	}
	img, campaign, netName, baseLabels := camp.image.tag, camp.id, camp.bridge.name, camp.labels
	var mode container.NetworkMode
	ipOn := netName // the network whose address is the instance's
	switch {
	case spec.ShareNetworkWith != "":
		mode, ipOn = container.NetworkMode("container:"+spec.ShareNetworkWith), ""
	case spec.Network == vocab.Host || spec.Network == "":
		mode = "host"
	case spec.Network == vocab.Bridge:
		if netName == "" {
			return nil, fmt.Errorf("instance %s: bridge network not prepared (Setup.Networks lacks %q)", spec.Name, vocab.Bridge)
		}
		mode = container.NetworkMode(netName)
	case spec.Network == vocab.BridgeDefault:
		mode, ipOn = "bridge", "bridge"
	case spec.Network == vocab.None:
		mode, ipOn = "none", ""
	default:
		return nil, fmt.Errorf("instance %s: docker platform does not support network %q", spec.Name, spec.Network)
	}
	res, err := resources(spec.Limits)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
	}
	if spec.Limits.ReadBps > 0 || spec.Limits.WriteBps > 0 {
		root := camp.daemon.rootDir
		node, _, err := sysinfo.BlockDevice(root)
		if err != nil {
			return nil, fmt.Errorf("instance %s: block I/O limits: the daemon's data root %s: %w", spec.Name, root, err)
		}
		if spec.Limits.ReadBps > 0 {
			res.BlkioDeviceReadBps = []*blkiodev.ThrottleDevice{{Path: node, Rate: uint64(spec.Limits.ReadBps)}}
		}
		if spec.Limits.WriteBps > 0 {
			res.BlkioDeviceWriteBps = []*blkiodev.ThrottleDevice{{Path: node, Rate: uint64(spec.Limits.WriteBps)}}
		}
	}
	res.CgroupParent = camp.cgParent
	hostCfg := &container.HostConfig{NetworkMode: mode, Resources: res, Runtime: spec.Options[FactorRuntime]}
	inv := spec.Agent
	switch spec.Storage {
	case "", vocab.Layer:
		// The agent writes in /tmp: the container's writable layer.
	case vocab.Volume:
		vol := camp.volume
		if vol == "" {
			return nil, fmt.Errorf("instance %s: volume not prepared (Setup.Storages lacks %q)", spec.Name, vocab.Volume)
		}
		hostCfg.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: DataMount}}
		inv.DataDir = DataMount
	case vocab.Tmpfs:
		hostCfg.Tmpfs = map[string]string{DataMount: "rw,exec"}
		inv.DataDir = DataMount
	default:
		return nil, fmt.Errorf("instance %s: docker platform does not support storage %q", spec.Name, spec.Storage)
	}
	cfg := &container.Config{
		Image:        img,
		Cmd:          inv.Args(),
		Labels:       objectLabels(campaign, baseLabels, spec.Labels),
		AttachStdout: true,
		AttachStderr: true,
	}
	if tweak != nil {
		tweak(cfg, hostCfg)
	}
	ctx, cancel := withTimeout(ctx, startTimeout)
	defer cancel()

	// The create itself is not cancelled by Ctrl-C: a request abandoned in
	// flight can still create the container in the daemon, and then no one
	// would know its ID to remove it. It completes (bounded by the start
	// timeout) and is removed below when ctx has ended meanwhile.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer ccancel()
	created, err := p.api.ContainerCreate(cctx, cfg, hostCfg, nil, nil, spec.Name)
	if err != nil {
		return nil, fmt.Errorf("creating container %s: %w", spec.Name, err)
	}
	inst := &instance{
		api:     p.api,
		hostPID: p.hostPIDs,
		id:      created.ID,
		name:    spec.Name,
		stdout:  newBuffer(),
		stderr:  tailbuf.New(stderrTail),
		done:    make(chan struct{}),
		timings: platform.Timings{Requested: requested, At: map[vocab.Phase]time.Time{vocab.Create: time.Now()}},
	}
	fail := func(err error) (platform.Instance, error) {
		inst.Remove(ctx)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		close(inst.done)
		inst.stdout.CloseWithError(io.EOF)
		return fail(fmt.Errorf("starting container %s: %w", spec.Name, err))
	}
	hj, err := p.api.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		close(inst.done)
		inst.stdout.CloseWithError(io.EOF)
		return fail(fmt.Errorf("attaching to container %s: %w", spec.Name, err))
	}
	inst.conn = hj
	go inst.demux()

	if err := p.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fail(fmt.Errorf("starting container %s: %w", spec.Name, err))
	}
	inst.mark(vocab.Start)
	c, err := p.api.ContainerInspect(ctx, created.ID)
	if err != nil {
		return fail(fmt.Errorf("inspecting container %s: %w", spec.Name, err))
	}
	if c.State != nil {
		inst.pid = c.State.Pid
	}
	if ipOn != "" && mode != "host" {
		if c.NetworkSettings != nil {
			if ep := c.NetworkSettings.Networks[ipOn]; ep != nil {
				inst.ip = ep.IPAddress
			}
		}
		// A container that exits at once has no address any more; only a
		// running one without an address is a fault.
		if inst.ip == "" && c.State != nil && c.State.Running {
			return fail(fmt.Errorf("container %s has no address on network %s", spec.Name, ipOn))
		}
	}
	return inst, nil
}

// resources maps limits to Docker's: CPUs to a CFS quota (NanoCPUs), and
// the memory limit also as the memory+swap limit so swap cannot stretch it.
func resources(l platform.Limits) (container.Resources, error) {
	var r container.Resources
	if l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return r, fmt.Errorf("invalid CPU limit %v", l.CPUs)
	}
	if l.MemoryBytes < 0 {
		return r, fmt.Errorf("invalid memory limit %d", l.MemoryBytes)
	}
	r.NanoCPUs = int64(math.Round(l.CPUs * 1e9))
	r.BlkioWeight = l.BlkioWeight
	r.CpusetCpus = l.Cpuset
	if l.MemoryBytes > 0 {
		r.Memory = l.MemoryBytes
		r.MemorySwap = l.MemoryBytes
	}
	return r, nil
}

// instance is one agent container.
type instance struct {
	api  API
	id   string
	name string
	ip   string
	pid  int // the container's first process, as its engine sees it
	// hostPID: pid is the machine's (the engine is not nested).
	hostPID bool

	conn   types.HijackedResponse
	stdout *buffer
	stderr *tailbuf.Buffer
	done   chan struct{} // closed when the output stream has ended

	mu      sync.Mutex
	removed bool
	timings platform.Timings // times as this client saw them
}

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
	if err := i.api.ContainerKill(ctx, i.id, "SIGUSR1"); err != nil {
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
	_, err := stdcopy.StdCopy(i.stdout, i.stderr, i.conn.Reader)
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

// NetNSPath implements platform.NetNSer: the container's network
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
	waitCh, errCh := i.api.ContainerWait(ctx, i.id, container.WaitConditionNotRunning)
	var code int
	select {
	case r := <-waitCh:
		i.mark(vocab.Exit)
		if r.Error != nil && r.Error.Message != "" {
			return platform.Exit{}, fmt.Errorf("waiting for container %s: %s", i.name, r.Error.Message)
		}
		code = int(r.StatusCode)
	case err := <-errCh:
		if ctx.Err() != nil {
			return platform.Exit{}, ctx.Err()
		}
		return platform.Exit{}, fmt.Errorf("waiting for container %s: %w", i.name, err)
	case <-ctx.Done():
		return platform.Exit{}, ctx.Err()
	}
	// The attach stream ends just after the process; give in-flight output
	// a moment so Stderr is complete.
	select {
	case <-i.done:
	case <-time.After(drainTimeout):
	case <-ctx.Done():
	}
	exit := platform.Exit{Code: code, Stderr: i.stderr.String()}
	if code != 0 {
		ictx, icancel := withTimeout(context.WithoutCancel(ctx), pingTimeout)
		defer icancel()
		if c, err := i.api.ContainerInspect(ictx, i.id); err == nil && c.State != nil && c.State.OOMKilled {
			limit := ""
			if c.HostConfig != nil && c.HostConfig.Memory > 0 {
				limit = fmt.Sprintf(" (memory limit %d bytes)", c.HostConfig.Memory)
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
	ctx, cancel := withTimeout(ctx, cleanupTimeout)
	defer cancel()
	if err := i.api.ContainerKill(ctx, i.id, "SIGTERM"); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("instance %s: %w", i.name, err)
	}
	return nil
}

func (i *instance) Remove(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.removed {
		return nil
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := removeContainer(ctx, i.api, i.id); err != nil {
		return fmt.Errorf("instance %s: %w", i.name, err)
	}
	i.removed = true
	i.markLocked(vocab.Remove)
	if i.conn.Conn != nil {
		i.conn.Close()
	}
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
var engineActions = map[events.Action]vocab.Phase{
	events.ActionCreate: vocab.Create, events.ActionStart: vocab.Start,
	events.ActionDie: vocab.Exit, events.ActionDestroy: vocab.Remove,
}

// EngineTimings implements platform.EngineTimer: the daemon's own
// timestamps of the container's create, start, die and destroy events,
// read back from its event log once the container is gone.
func (i *instance) EngineTimings(ctx context.Context) (map[vocab.Phase]time.Time, error) {
	i.mu.Lock()
	since, until := i.timings.Requested, time.Now()
	i.mu.Unlock()
	ctx, cancel := withTimeout(ctx, cleanupTimeout)
	defer cancel()
	msgs, errs := i.api.Events(ctx, events.ListOptions{
		Since:   eventTime(since.Add(-time.Second)),
		Until:   eventTime(until), // in the past: the stream ends at once
		Filters: filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", i.id)),
	})
	out := map[vocab.Phase]time.Time{}
	for {
		select {
		case m := <-msgs:
			if ph, ok := engineActions[m.Action]; ok && m.Actor.ID == i.id {
				if _, seen := out[ph]; !seen {
					out[ph] = time.Unix(0, m.TimeNano)
				}
			}
		case err := <-errs:
			if err == nil || errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("instance %s: reading the engine's events: %w", i.name, err)
		case <-ctx.Done():
			return nil, fmt.Errorf("instance %s: reading the engine's events: %w", i.name, ctx.Err())
		}
	}
}

// eventTime is t as the events API takes it: seconds.nanoseconds.
func eventTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
