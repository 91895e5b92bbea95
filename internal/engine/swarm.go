package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// Swarm is a Docker Swarm as one of its engines shows it: a manager's for
// services, tasks, nodes and networks, any node's for joining. Like the
// rest of this package it is the only code that speaks the Engine API.
type Swarm struct {
	api  *client.Client
	Host string // the engine's address, for messages
	tls  bool
	// Warning, when set, is for the user: how the engine is reached is
	// less safe than it should be (TLS verification off).
	Warning string
}

// Ping reports whether the manager's engine answers.
func (s *Swarm) Ping(ctx context.Context) error {
	_, err := s.api.Ping(ctx)
	return err
}

// DialSwarm connects to the engine e names (its address, or a Docker CLI
// context, with TLS), or to the one the environment names when e is zero.
func DialSwarm(e platform.Engine) (*Swarm, error) {
	ep, err := engineOptions(e)
	if err != nil {
		return nil, err
	}
	c, err := client.NewClientWithOpts(append(ep.opts, client.WithAPIVersionNegotiation())...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", ep.desc, err)
	}
	return &Swarm{api: c, Host: ep.desc, tls: ep.tls, Warning: ep.warning}, nil
}

// Close releases the connection.
func (s *Swarm) Close() error { return s.api.Close() }

// SwarmState is what an engine says of its place in a swarm.
type SwarmState struct {
	NodeID    string
	State     string // inactive, pending, active, error, locked
	Manager   bool
	Nodes     int
	Managers  int
	Addr      string // the node's advertised address
	Version   string // the engine's version
	Kernel    string
	VXLANPort uint32 // the swarm's data path port (4789 unless set)
}

// State reads the engine's swarm state.
func (s *Swarm) State(ctx context.Context) (SwarmState, error) {
	ctx, cancel := WithTimeout(ctx, PingTimeout)
	defer cancel()
	info, err := s.api.Info(ctx)
	if err != nil {
		hint := ""
		if strings.HasPrefix(s.Host, "tcp://") && !s.tls {
			hint = " (if it takes TLS, as a remote engine should: --tlsverify with --tlscacert, --tlscert and --tlskey, or DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH, or a --context that has them)"
		}
		return SwarmState{}, fmt.Errorf("engine %s does not answer: %w%s", s.Host, err, hint)
	}
	st := SwarmState{NodeID: info.Swarm.NodeID, State: string(info.Swarm.LocalNodeState), Manager: info.Swarm.ControlAvailable,
		Nodes: info.Swarm.Nodes, Managers: info.Swarm.Managers, Addr: info.Swarm.NodeAddr, Version: info.ServerVersion, Kernel: info.KernelVersion, VXLANPort: 4789}
	if st.Manager {
		if sw, err := s.api.SwarmInspect(ctx); err == nil && sw.DataPathPort != 0 {
			st.VXLANPort = sw.DataPathPort
		}
	}
	return st, nil
}

// Init makes the engine the first manager of a new swarm, advertised at
// addr, its overlays and ingress taking /24s of pool (swarm init's
// --default-addr-pool; without it the swarm takes 10.0.0.0/8's); it
// returns the token a worker joins with.
func (s *Swarm) Init(ctx context.Context, addr string, pool netip.Prefix) (string, error) {
	req := swarm.InitRequest{ListenAddr: "0.0.0.0:2377", AdvertiseAddr: addr}
	if pool.IsValid() {
		req.DefaultAddrPool, req.SubnetSize = []string{pool.String()}, 24
	}
	if _, err := s.api.SwarmInit(ctx, req); err != nil {
		return "", fmt.Errorf("swarm init on %s: %w", s.Host, err)
	}
	sw, err := s.api.SwarmInspect(ctx)
	if err != nil {
		return "", fmt.Errorf("swarm inspect on %s: %w", s.Host, err)
	}
	return sw.JoinTokens.Worker, nil
}

// Join makes the engine a worker of the swarm whose manager is at
// manager, advertised at addr.
func (s *Swarm) Join(ctx context.Context, manager, token, addr string) error {
	if err := s.api.SwarmJoin(ctx, swarm.JoinRequest{ListenAddr: "0.0.0.0:2377", AdvertiseAddr: addr, RemoteAddrs: []string{manager + ":2377"}, JoinToken: token}); err != nil {
		return fmt.Errorf("swarm join of %s: %w", s.Host, err)
	}
	return nil
}

// SwarmNode is one node of a swarm.
type SwarmNode struct {
	ID, Hostname, Addr, Role, State, Availability string
	Labels                                        map[string]string
	NanoCPUs, MemoryBytes                         int64
}

// Nodes lists the swarm's nodes: ready ones first, then by hostname.
func (s *Swarm) Nodes(ctx context.Context) ([]SwarmNode, error) {
	ns, err := s.api.NodeList(ctx, swarm.NodeListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the swarm's nodes on %s: %w", s.Host, err)
	}
	out := make([]SwarmNode, 0, len(ns))
	for _, n := range ns {
		out = append(out, SwarmNode{ID: n.ID, Hostname: n.Description.Hostname, Addr: n.Status.Addr, Role: string(n.Spec.Role),
			State: string(n.Status.State), Availability: string(n.Spec.Availability), Labels: n.Spec.Labels,
			NanoCPUs: n.Description.Resources.NanoCPUs, MemoryBytes: n.Description.Resources.MemoryBytes})
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := out[i].State == string(swarm.NodeStateReady), out[j].State == string(swarm.NodeStateReady)
		if ri != rj {
			return ri
		}
		return out[i].Hostname < out[j].Hostname
	})
	return out, nil
}

// SetNodeLabel puts a label on a node (ctrbench's emulated nodes carry
// their index).
func (s *Swarm) SetNodeLabel(ctx context.Context, id, key, value string) error {
	n, _, err := s.api.NodeInspectWithRaw(ctx, id)
	if err != nil {
		return err
	}
	spec := n.Spec
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels[key] = value
	return s.api.NodeUpdate(ctx, id, n.Version, spec)
}

// Overlay is an overlay network the swarm made.
type Overlay struct {
	ID, Name, Driver, Subnet string
	MTU                      string // the driver's MTU option, or its default
	Encrypted                bool
}

// overlayMTU is the MTU libnetwork's overlay driver gives its interfaces
// without an mtu option: 1500 minus the 50 bytes of VXLAN encapsulation.
const overlayMTU = "1450"

// CreateOverlay creates an attachable swarm overlay network, encrypted
// (IPsec ESP between nodes) when asked, on the first of subnets that none
// of the swarm's networks holds (the ingress's among them: a manager
// accepts a network whose subnet overlaps another's and then never
// allocates it).
func (s *Swarm) CreateOverlay(ctx context.Context, name string, labels map[string]string, encrypted bool, subnets []netip.Prefix) (Overlay, error) {
	opts := map[string]string{}
	if encrypted {
		opts["encrypted"] = ""
	}
	held, err := s.subnets(ctx)
	if err != nil {
		return Overlay{}, err
	}
	subnets = slices.DeleteFunc(slices.Clone(subnets), func(p netip.Prefix) bool {
		return slices.ContainsFunc(held, p.Overlaps)
	})
	var resp network.CreateResponse
	for _, sub := range subnets {
		resp, err = s.api.NetworkCreate(ctx, name, network.CreateOptions{Driver: "overlay", Attachable: true, Labels: labels, Options: opts,
			IPAM: &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: sub.String()}}}})
		if err == nil || !overlaps(err) {
			break
		}
	}
	if len(subnets) == 0 {
		err = errors.New("every subnet of the pool's swarm range is another network's")
	}
	if err != nil {
		return Overlay{}, fmt.Errorf("creating overlay network %s on %s: %w", name, s.Host, err)
	}
	// The swarm allocates the network (its subnet, its driver's state)
	// just after creating it: read it once that is done.
	var ni network.Inspect
	for deadline := time.Now().Add(10 * time.Second); ; {
		ni, err = s.api.NetworkInspect(ctx, resp.ID, network.InspectOptions{})
		if err != nil {
			return Overlay{}, fmt.Errorf("inspecting overlay network %s: %w", name, err)
		}
		if ni.Driver != "" && len(ni.IPAM.Config) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ni.Driver == "" {
		return Overlay{}, fmt.Errorf("overlay network %s: the swarm did not allocate it within 10 s", name)
	}
	o := Overlay{ID: ni.ID, Name: ni.Name, Driver: ni.Driver, MTU: overlayMTU, Encrypted: encrypted}
	if m := ni.Options["com.docker.network.driver.mtu"]; m != "" {
		o.MTU = m
	}
	for _, c := range ni.IPAM.Config {
		o.Subnet = c.Subnet
	}
	return o, nil
}

// subnets are those of the swarm's networks.
func (s *Swarm) subnets(ctx context.Context) ([]netip.Prefix, error) {
	nets, err := s.api.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("scope", "swarm"))})
	if err != nil {
		return nil, fmt.Errorf("listing the swarm's networks on %s: %w", s.Host, err)
	}
	var out []netip.Prefix
	for _, n := range nets {
		for _, c := range n.IPAM.Config {
			if p, err := netip.ParsePrefix(c.Subnet); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	return out, nil
}

// RemoveNetwork removes a network, retrying while the swarm still takes
// down tasks attached to it.
func (s *Swarm) RemoveNetwork(ctx context.Context, id string) error {
	deadline := time.Now().Add(CleanupTimeout)
	for {
		err := s.api.NetworkRemove(ctx, id)
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("removing network %s: %w", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ServiceSpec is one service of one task.
type ServiceSpec struct {
	Name    string
	Image   string // an image ID ("sha256:…"): the nodes never pull
	Args    []string
	Env     []string
	Labels  map[string]string
	Network string // a network ID, or "host"
	// Constraints place the task ("node.id==…", "node.labels.k==v").
	Constraints []string
	NanoCPUs    int64
	MemoryBytes int64
	Tmpfs       string // a container path mounted as tmpfs, or ""
}

// CreateService creates a replicated service with one task that is never
// restarted; its endpoint is DNS round-robin (no virtual IP, so no IPVS
// on the nodes).
func (s *Swarm) CreateService(ctx context.Context, sp ServiceSpec) (string, error) {
	one := uint64(1)
	grace := 10 * time.Second
	cs := &swarm.ContainerSpec{Image: sp.Image, Args: sp.Args, Env: sp.Env, Labels: sp.Labels, StopGracePeriod: &grace}
	if sp.Tmpfs != "" {
		cs.Mounts = []mount.Mount{{Type: mount.TypeTmpfs, Target: sp.Tmpfs}}
	}
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: sp.Name, Labels: sp.Labels},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: cs,
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionNone},
			Placement:     &swarm.Placement{Constraints: sp.Constraints},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: sp.Network}},
		},
		Mode:         swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &one}},
		EndpointSpec: &swarm.EndpointSpec{Mode: swarm.ResolutionModeDNSRR},
	}
	if sp.NanoCPUs > 0 || sp.MemoryBytes > 0 {
		spec.TaskTemplate.Resources = &swarm.ResourceRequirements{Limits: &swarm.Limit{NanoCPUs: sp.NanoCPUs, MemoryBytes: sp.MemoryBytes}}
	}
	resp, err := s.api.ServiceCreate(ctx, spec, swarm.ServiceCreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating service %s on %s: %w", sp.Name, s.Host, err)
	}
	return resp.ID, nil
}

// Task is a service's task as the swarm records it.
type Task struct {
	ID, NodeID  string
	State       string // new … running, complete, failed, shutdown, rejected…
	At          time.Time
	CreatedAt   time.Time
	Message     string
	Err         string
	ContainerID string
	ExitCode    int
	// Addrs are its addresses (with prefix) by network ID.
	Addrs map[string]string
}

// Terminal reports whether the task has ended.
func (t Task) Terminal() bool {
	switch swarm.TaskState(t.State) {
	case swarm.TaskStateComplete, swarm.TaskStateFailed, swarm.TaskStateShutdown, swarm.TaskStateRejected,
		swarm.TaskStateOrphaned, swarm.TaskStateRemove:
		return true
	}
	return false
}

// Running reports whether the task's container runs (or ran).
func (t Task) Running() bool { return t.State == string(swarm.TaskStateRunning) }

// ServiceTask is the newest task of a service; ok is false before the
// swarm made one.
func (s *Swarm) ServiceTask(ctx context.Context, serviceID string) (Task, bool, error) {
	ts, err := s.api.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", serviceID))})
	if err != nil {
		return Task{}, false, fmt.Errorf("listing the tasks of service %s: %w", serviceID, err)
	}
	if len(ts) == 0 {
		return Task{}, false, nil
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].CreatedAt.After(ts[j].CreatedAt) })
	t := ts[0]
	out := Task{ID: t.ID, NodeID: t.NodeID, State: string(t.Status.State), At: t.Status.Timestamp, CreatedAt: t.CreatedAt,
		Message: t.Status.Message, Err: t.Status.Err, Addrs: map[string]string{}}
	if cs := t.Status.ContainerStatus; cs != nil {
		out.ContainerID, out.ExitCode = cs.ContainerID, cs.ExitCode
	}
	for _, a := range t.NetworksAttachments {
		if len(a.Addresses) > 0 {
			out.Addrs[a.Network.ID] = a.Addresses[0]
		}
	}
	return out, true, nil
}

// TaskLogs streams a task's standard output to stdout and its standard
// error to stderr, from its start, until the task's container ends (or,
// with follow false, up to now); it returns when the stream ends.
func (s *Swarm) TaskLogs(ctx context.Context, taskID string, follow bool, stdout, stderr io.Writer) error {
	rc, err := s.api.TaskLogs(ctx, taskID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return fmt.Errorf("logs of task %s: %w", taskID, err)
	}
	defer rc.Close()
	_, err = stdcopy.StdCopy(stdout, stderr, rc)
	return err
}

// ScaleToZero asks the service's task to stop: the swarm sends its
// container SIGTERM (SIGKILL after the grace period). The task and its
// logs stay until the service is removed.
func (s *Swarm) ScaleToZero(ctx context.Context, serviceID string) error {
	svc, _, err := s.api.ServiceInspectWithRaw(ctx, serviceID, swarm.ServiceInspectOptions{})
	if err != nil {
		return fmt.Errorf("inspecting service %s: %w", serviceID, err)
	}
	zero := uint64(0)
	spec := svc.Spec
	spec.Mode.Replicated.Replicas = &zero
	if _, err := s.api.ServiceUpdate(ctx, serviceID, svc.Version, spec, swarm.ServiceUpdateOptions{}); err != nil {
		return fmt.Errorf("stopping service %s: %w", serviceID, err)
	}
	return nil
}

// RemoveService removes a service (the swarm then removes its task's
// container); a service already gone is not an error.
func (s *Swarm) RemoveService(ctx context.Context, id string) error {
	if err := s.api.ServiceRemove(ctx, id); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing service %s: %w", id, err)
	}
	return nil
}

// AwaitNoTasks waits until the swarm has no task of the given services
// left (it removes a removed service's tasks, and their containers on the
// nodes, after the service), so their networks can go and nothing of
// them stays on a node.
func (s *Swarm) AwaitNoTasks(ctx context.Context, serviceIDs []string, wait time.Duration) error {
	ours := map[string]bool{}
	for _, id := range serviceIDs {
		ours[id] = true
	}
	deadline := time.Now().Add(wait)
	for {
		// All tasks, matched here: a task of a removed service is no
		// longer found by its service.
		ts, err := s.api.TaskList(ctx, swarm.TaskListOptions{})
		if err != nil {
			return fmt.Errorf("listing tasks on %s: %w", s.Host, err)
		}
		left := 0
		for _, t := range ts {
			if ours[t.ServiceID] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d tasks of ctrbench's services still on %s after %s", left, s.Host, wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ImageID is the ID ("sha256:…") of an image in this engine.
func (s *Swarm) ImageID(ctx context.Context, ref string) (string, error) {
	ii, err := s.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", err
	}
	return ii.ID, nil
}

// LoadImage loads a saved image (`docker save` format) into this engine.
func (s *Swarm) LoadImage(ctx context.Context, r io.Reader) error {
	resp, err := s.api.ImageLoad(ctx, r)
	if err != nil {
		return fmt.Errorf("loading the agent image into %s: %w", s.Host, err)
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// RemoveImage removes an image from this engine.
func (s *Swarm) RemoveImage(ctx context.Context, ref string) error {
	if _, err := s.api.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing image %s from %s: %w", ref, s.Host, err)
	}
	return nil
}

// SwarmLeftovers are ctrbench's services and networks on a swarm.
type SwarmLeftovers struct {
	Services, Networks []string
}

// Leftovers lists (and with remove, removes) the services and networks
// carrying ctrbench's labels (of one campaign, or all when campaign is
// ""); keep says which to leave alone (a campaign whose ctrbench runs).
func (s *Swarm) Leftovers(ctx context.Context, campaign string, remove bool, keep func(labels map[string]string) bool) (SwarmLeftovers, error) {
	var out SwarmLeftovers
	f := campaignFilter(campaign)
	svcs, err := s.api.ServiceList(ctx, swarm.ServiceListOptions{Filters: f})
	if err != nil {
		return out, fmt.Errorf("listing services on %s: %w", s.Host, err)
	}
	var errs []error
	for _, sv := range svcs {
		if keep != nil && keep(sv.Spec.Labels) {
			continue
		}
		out.Services = append(out.Services, sv.Spec.Name)
		if remove {
			errs = append(errs, s.RemoveService(ctx, sv.ID))
		}
	}
	ns, err := s.api.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("listing networks on %s: %w", s.Host, err))...)
	}
	for _, n := range ns {
		if keep != nil && keep(n.Labels) {
			continue
		}
		out.Networks = append(out.Networks, n.Name)
		if remove {
			errs = append(errs, s.RemoveNetwork(ctx, n.ID))
		}
	}
	return out, errors.Join(errs...)
}

// Signal sends a container of this engine a signal ("USR1").
func (s *Swarm) Signal(ctx context.Context, containerID, sig string) error {
	if err := s.api.ContainerKill(ctx, containerID, sig); err != nil {
		return fmt.Errorf("signalling container %s on %s: %w", containerID, s.Host, err)
	}
	return nil
}
