package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/blkiodev"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
)

// ContainerSpec is a container to create, in ctrbench's terms.
type ContainerSpec struct {
	Name     string
	Image    string
	Cmd      []string
	Env      []string // added to the image's environment
	Labels   map[string]string
	Hostname string // "" for Docker's default, its short ID
	// Network is the container's network mode: "host", "none", "bridge"
	// (Docker's default bridge), "container:<id>" (another's namespace)
	// or a network's name.
	Network   string
	Runtime   string // the OCI runtime, "" for the engine's default
	Resources Resources
	// Attach: the container's standard output and error are attached
	// (Attach before Start loses nothing).
	Attach bool
	// Volume is mounted at VolumeTarget when set.
	Volume, VolumeTarget string
	// Tmpfs are container paths mounted as tmpfs with their options;
	// Binds host:container[:ro] bind mounts.
	Tmpfs map[string]string
	Binds []string
	// Sysctls are namespaced kernel settings of the container.
	Sysctls map[string]string
	// Privileges, when set, let the container run an engine inside.
	Privileges *Privileges
	// Publish are ports the engine publishes on the machine (docker run
	// -p HOSTIP::PORT/PROTO), each on a port of its choice.
	Publish []PortBinding
}

// PortBinding is a container's port published on the machine's address
// HostIP, at HostPort or, when 0, a port the engine chooses.
type PortBinding struct {
	Port     int
	Proto    string // tcp or udp
	HostIP   string
	HostPort int
}

// Resources are a container's limits and cgroup.
type Resources struct {
	NanoCPUs     int64 // a CFS quota, in billionths of a CPU
	CpusetCpus   string
	Memory       int64
	MemorySwap   int64 // memory+swap
	BlkioWeight  uint16
	ReadBps      []Throttle
	WriteBps     []Throttle
	CgroupParent string
	PidsLimit    int64 // 0: none
}

// Throttle is a block device's bytes-per-second limit.
type Throttle struct {
	Path string // the device node
	Rate uint64
}

func throttles(ts []Throttle) []*blkiodev.ThrottleDevice {
	var out []*blkiodev.ThrottleDevice
	for _, t := range ts {
		out = append(out, &blkiodev.ThrottleDevice{Path: t.Path, Rate: t.Rate})
	}
	return out
}

// configs are the spec as the Engine API takes it.
func (s ContainerSpec) configs() (*container.Config, *container.HostConfig) {
	cfg := &container.Config{Image: s.Image, Cmd: s.Cmd, Env: s.Env, Labels: s.Labels, AttachStdout: s.Attach, AttachStderr: s.Attach, Hostname: s.Hostname}
	r := s.Resources
	hc := &container.HostConfig{NetworkMode: container.NetworkMode(s.Network), Runtime: s.Runtime, Resources: container.Resources{
		NanoCPUs: r.NanoCPUs, CpusetCpus: r.CpusetCpus, Memory: r.Memory, MemorySwap: r.MemorySwap, BlkioWeight: r.BlkioWeight,
		BlkioDeviceReadBps: throttles(r.ReadBps), BlkioDeviceWriteBps: throttles(r.WriteBps), CgroupParent: r.CgroupParent,
	}}
	if r.PidsLimit > 0 {
		hc.PidsLimit = &r.PidsLimit
	}
	if s.Volume != "" {
		hc.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: s.Volume, Target: s.VolumeTarget}}
	}
	hc.Tmpfs, hc.Binds = s.Tmpfs, slices.Clone(s.Binds)
	if len(s.Sysctls) > 0 {
		hc.Sysctls = s.Sysctls
	}
	if s.Privileges != nil {
		s.Privileges.apply(hc)
	}
	if len(s.Publish) > 0 {
		cfg.ExposedPorts, hc.PortBindings = nat.PortSet{}, nat.PortMap{}
		for _, b := range s.Publish {
			port := nat.Port(strconv.Itoa(b.Port) + "/" + b.Proto)
			cfg.ExposedPorts[port] = struct{}{}
			pb := nat.PortBinding{HostIP: b.HostIP}
			if b.HostPort != 0 {
				pb.HostPort = strconv.Itoa(b.HostPort)
			}
			hc.PortBindings[port] = append(hc.PortBindings[port], pb)
		}
	}
	return cfg, hc
}

// CreateContainer creates a container and returns its ID.
func (e *Engine) CreateContainer(ctx context.Context, s ContainerSpec) (string, error) {
	cfg, hc := s.configs()
	created, err := e.api.ContainerCreate(ctx, cfg, hc, nil, nil, s.Name)
	return created.ID, err
}

// Attachment is a container's attached output stream.
type Attachment struct{ hj types.HijackedResponse }

// Attach attaches to a container's standard output and error.
func (e *Engine) Attach(ctx context.Context, id string) (*Attachment, error) {
	hj, err := e.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, err
	}
	return &Attachment{hj: hj}, nil
}

// Demux copies the stream to stdout and stderr until it ends (the
// container exited, or Close).
func (a *Attachment) Demux(stdout, stderr io.Writer) error {
	_, err := stdcopy.StdCopy(stdout, stderr, a.hj.Reader)
	return err
}

// Close ends the stream; a nil Attachment is none.
func (a *Attachment) Close() {
	if a != nil && a.hj.Conn != nil {
		a.hj.Close()
	}
}

// StartContainer starts a created container.
func (e *Engine) StartContainer(ctx context.Context, id string) error {
	return e.api.ContainerStart(ctx, id, container.StartOptions{})
}

// ContainerState is what an inspection says of a container.
type ContainerState struct {
	Known     bool // the engine reported its state (the fields below)
	Pid       int  // its first process, as the engine sees it
	Running   bool
	OOMKilled bool
	// Configured: the engine reported its host configuration (Memory,
	// Runtime).
	Configured bool
	Memory     int64  // its memory limit
	Runtime    string // its OCI runtime
	// IPs are its addresses by network name.
	IPs map[string]string
	// Published are its published ports: "PORT/PROTO" → "HOSTIP:HOSTPORT"
	// on the machine.
	Published map[string]string
}

// InspectContainer reads a container's state.
func (e *Engine) InspectContainer(ctx context.Context, id string) (ContainerState, error) {
	c, err := e.api.ContainerInspect(ctx, id)
	if err != nil {
		return ContainerState{}, err
	}
	var st ContainerState
	if c.State != nil {
		st.Known, st.Pid, st.Running, st.OOMKilled = true, c.State.Pid, c.State.Running, c.State.OOMKilled
	}
	if c.HostConfig != nil {
		st.Configured, st.Memory, st.Runtime = true, c.HostConfig.Memory, c.HostConfig.Runtime
	}
	if c.NetworkSettings != nil {
		st.IPs = map[string]string{}
		for name, ep := range c.NetworkSettings.Networks {
			if ep != nil {
				st.IPs[name] = ep.IPAddress
			}
		}
		for port, bs := range c.NetworkSettings.Ports {
			for _, b := range bs {
				if st.Published == nil {
					st.Published = map[string]string{}
				}
				st.Published[string(port)] = net.JoinHostPort(b.HostIP, b.HostPort)
			}
		}
	}
	return st, nil
}

// WaitContainer waits until the container is not running: its exit code,
// and the engine's message when waiting itself failed there. err is the
// wait's own failure (ctx's error when ctx ends first).
func (e *Engine) WaitContainer(ctx context.Context, id string) (code int64, msg string, err error) {
	waitCh, errCh := e.api.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case r := <-waitCh:
		if r.Error != nil {
			msg = r.Error.Message
		}
		return r.StatusCode, msg, nil
	case err := <-errCh:
		return 0, "", err
	case <-ctx.Done():
		return 0, "", ctx.Err()
	}
}

// Signal sends a container a signal ("SIGUSR1").
func (e *Engine) Signal(ctx context.Context, id, sig string) error {
	return e.api.ContainerKill(ctx, id, sig)
}

// Gone reports whether an engine's error says the container is not
// there, or not running, any more.
func Gone(err error) bool { return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) }

// RemoveContainer force-removes a container; one that is already gone, or
// being removed by someone else, counts as removed.
func (e *Engine) RemoveContainer(ctx context.Context, id string) error {
	return removeContainer(ctx, e.api, id)
}

func removeContainer(ctx context.Context, api API, id string) error {
	err := api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if err == nil || cerrdefs.IsNotFound(err) || isRemovalInProgress(err) {
		return nil
	}
	return fmt.Errorf("removing container %s: %w", shortID(id), err)
}

// RemoveContainers force-removes containers and returns the errors of
// those that stay. A container sharing another's network namespace
// depends on it (podman refuses to remove the other first: "has dependent
// containers"), so the ones that failed are tried once more after the
// rest.
func (e *Engine) RemoveContainers(ctx context.Context, ids []string) map[string]error {
	return removeContainers(ctx, e.api, ids)
}

func removeContainers(ctx context.Context, api API, ids []string) map[string]error {
	failed := map[string]error{}
	var retry []string
	for _, id := range ids {
		if removeContainer(ctx, api, id) != nil {
			retry = append(retry, id)
		}
	}
	for _, id := range retry {
		if err := removeContainer(ctx, api, id); err != nil {
			failed[id] = err
		}
	}
	return failed
}

func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && containsFold(err.Error(), "already in progress")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// CampaignContainers lists the IDs of a campaign's containers, running or
// not.
func (e *Engine) CampaignContainers(ctx context.Context, campaign string) ([]string, error) {
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: campaignFilter(campaign)})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, ct := range list {
		ids[i] = ct.ID
	}
	return ids, nil
}

// Container events: the actions of a container's life.
const (
	ActionCreate  = string(events.ActionCreate)
	ActionStart   = string(events.ActionStart)
	ActionDie     = string(events.ActionDie)
	ActionDestroy = string(events.ActionDestroy)
)

// ContainerEvents reads back, from the engine's event log, the time of the
// first event of each action of container id between since and until
// (in the past: the stream ends at once).
func (e *Engine) ContainerEvents(ctx context.Context, id string, since, until time.Time) (map[string]time.Time, error) {
	msgs, errs := e.api.Events(ctx, events.ListOptions{
		Since:   eventTime(since),
		Until:   eventTime(until),
		Filters: filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", id)),
	})
	out := map[string]time.Time{}
	for {
		select {
		case m := <-msgs:
			if _, seen := out[string(m.Action)]; !seen && m.Actor.ID == id {
				out[string(m.Action)] = time.Unix(0, m.TimeNano)
			}
		case err := <-errs:
			if err == nil || errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// eventTime is t as the events API takes it: seconds.nanoseconds.
func eventTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
