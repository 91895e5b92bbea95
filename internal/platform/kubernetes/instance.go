package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Bounds of an instance's life.
const (
	startTimeout = 2 * time.Minute
	stopGrace    = 30 * time.Second // for an agent told to stop: it prints its result and exits
	stderrLines  = 20
)

// instance is one pod running one agent, and the agents beside it.
type instance struct {
	*platform.Clock
	*follower // its own container's agent
	p         *Platform
	pod       *kube.Pod
	node      kube.Node
	seen      map[string]string
	beside    []*sidecar

	svc       *kube.Service     // a fronted server's Service
	published string            // where it is reached through it
	probe     string            // and its probe port
	ports     map[string]string // each port it is reached at ("8080/tcp" → HOST:PORT)

	mu sync.Mutex
	// stopping: ctrbench asked for the pod's end (Stop, Remove).
	stopping bool
	removed  bool
	cancel   context.CancelFunc // ends the follows
}

// Start implements platform.Platform: a pod of the agent (and of the
// agents beside it) on the node the spec places it on (or the scheduler's
// choice); it returns once they run (or have ended).
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	requested := time.Now()
	ps, nd, err := p.podSpec(spec)
	if err != nil {
		return nil, err
	}
	// The create is not cancelled by Ctrl-C: a pod made by a request
	// abandoned in flight would have no one to remove it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	pod, err := p.c.StartPod(cctx, ps)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	started := time.Now()
	in := &instance{Clock: platform.NewClock(requested), p: p, pod: pod, node: nd}
	in.timed(pod.Lifecycle, started)
	p.mu.Lock()
	p.live[in] = true
	p.mu.Unlock()
	if err := in.follow(ctx, ps); err != nil {
		return nil, errors.Join(err, in.Remove(context.WithoutCancel(ctx)))
	}
	in.seen = map[string]string{"kubernetes.pod": pod.Namespace + "/" + pod.Name, "kubernetes.node": pod.Node, "kubernetes.pod_ip": pod.IP, "kubernetes.qos_class": pod.QOS}
	if n, err := p.nodeNamed(pod.Node); err == nil {
		for f, label := range nodeFactors {
			if v := n.Labels[label]; v != "" {
				in.seen["kubernetes."+f] = v
			}
		}
	}
	if spec.Image != nil {
		in.seen[platform.SeenImage], in.seen[platform.SeenImageID] = spec.Image.String(), ps.Image
	}
	if len(spec.Beside) > 0 {
		in.seen["kubernetes.containers"] = strconv.Itoa(1 + len(spec.Beside))
	}
	if r := ps.Readiness; r != nil {
		in.seen["kubernetes.readiness"] = readinessText(r)
	}
	if fronts(spec) {
		if err := in.front(cctx, spec); err != nil {
			return nil, errors.Join(err, in.Remove(context.WithoutCancel(ctx)))
		}
	}
	return in, nil
}

// follow follows the agents of the pod's containers until Remove (not the
// start's deadline): its own, whose exit is the instance's, and those
// beside it.
func (in *instance) follow(ctx context.Context, ps kube.PodSpec) error {
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	in.mu.Lock()
	in.cancel = wcancel
	in.mu.Unlock()
	f, err := follow(wctx, in.p.c, in.pod, func(deleted bool) bool {
		in.Mark(vocab.Exit)
		return in.vanished(deleted)
	})
	if err != nil {
		return err
	}
	in.follower = f
	for _, sc := range ps.Sidecars {
		f, err := follow(wctx, in.p.c, in.pod.Sidecar(sc.Name), in.vanished)
		if err != nil {
			return err
		}
		in.beside = append(in.beside, &sidecar{follower: f, pod: in})
	}
	return nil
}

// vanished says whether a pod that was being deleted (deleted) when one of
// its agents ended was deleted by something else than ctrbench (Stop,
// Remove): an eviction, a kubectl delete.
func (in *instance) vanished(deleted bool) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return deleted && !in.stopping
}

// Beside implements platform.Pod.
func (in *instance) Beside() []platform.Instance {
	out := make([]platform.Instance, len(in.beside))
	for i, s := range in.beside {
		out[i] = s
	}
	return out
}

// Go implements platform.Goer: the agent is signalled through exec.
func (in *instance) Go(ctx context.Context) error { return in.signal(ctx, "go") }

var (
	_ platform.Fronted = (*instance)(nil)
	_ platform.Seer    = (*instance)(nil)
	_ platform.Goer    = (*instance)(nil)
	_ platform.Pod     = (*instance)(nil)
)

// fronts reports whether an instance is a server its platform fronts: a
// run's server on network service or nodeport, on the port named for it.
func fronts(spec platform.InstanceSpec) bool {
	return spec.Network.Fronted() && spec.Agent.Port > 0 && spec.Agent.Kind == invocation.Run
}

// labelPod is the label a fronted server's pod carries, its name: its
// Service selects it alone.
const labelPod = "io.ctrbench.pod"

// The names of a fronted server's Service's ports.
const (
	portAgent = "agent"
	portProbe = "probe"
)

// front makes the Service a server on network service or nodeport is
// reached through: a ClusterIP for service, a NodePort for nodeport,
// reached at the server's node's address; on the agent's port and on its
// probe port, which a client connects to until the Service carries a
// connection (kube-proxy writes a new Service's rules some time after its
// endpoint is ready, both ports in one update).
func (in *instance) front(ctx context.Context, spec platform.InstanceSpec) error {
	port := int32(spec.Agent.Port)
	ports := []kube.ServicePort{{Name: portAgent, Port: port, TargetPort: port}, {Name: portProbe, Port: platform.ProbePort, TargetPort: platform.ProbePort}}
	for _, m := range spec.Publish {
		ports = append(ports, kube.ServicePort{Name: morePort(m), Port: int32(m.Number), TargetPort: int32(m.Number)})
	}
	svc, err := in.p.c.CreateService(ctx, in.pod.Namespace, in.pod.Name, map[string]string{labelPod: in.pod.Name}, ports, spec.Network == vocab.NodePort)
	if err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	in.svc = svc
	host, agent, probe := svc.ClusterIP, svc.Ports[portAgent].Port, svc.Ports[portProbe].Port
	if spec.Network == vocab.NodePort {
		nd, err := in.p.nodeNamed(in.pod.Node)
		if err != nil {
			return err
		}
		host, agent, probe = nd.InternalIP, svc.Ports[portAgent].NodePort, svc.Ports[portProbe].NodePort
	}
	in.published = net.JoinHostPort(host, strconv.Itoa(int(agent)))
	in.probe = net.JoinHostPort(host, strconv.Itoa(int(probe)))
	in.ports = map[string]string{vocab.Port{Number: int(port), Proto: "tcp"}.String(): in.published}
	for _, m := range spec.Publish {
		sp := svc.Ports[morePort(m)]
		n := sp.Port
		if spec.Network == vocab.NodePort {
			n = sp.NodePort
		}
		in.ports[m.String()] = net.JoinHostPort(host, strconv.Itoa(int(n)))
	}
	in.seen["kubernetes.service"] = svc.Name
	in.seen["kubernetes.service_address"] = in.published
	return nil
}

// Published implements platform.Publisher: where a fronted server is
// reached, its Service's ClusterIP and port or its node's address and
// NodePort; "" for any other instance.
func (in *instance) Published() string { return in.published }

// PublishedPorts implements platform.Publisher: the agent's port and the
// server's more ports, fronted.
func (in *instance) PublishedPorts() map[string]string { return maps.Clone(in.ports) }

// morePort names a server's more port in its Service.
func morePort(p vocab.Port) string { return "p" + strconv.Itoa(p.Number) }

// Probe implements platform.Fronted: the server's probe port through its
// Service.
func (in *instance) Probe() string { return in.probe }

// timed marks the phases the pod's way to running passed, as its watch
// saw them (package kube's stages): created; scheduled (assigned); the
// kubelet's first status, which says it is initialized (preparing: with no
// init containers it has taken the pod and begins its sandbox); its
// sandbox and network made (starting: the container is being started);
// its container running (start: ContainersReady — the agent has no
// readiness probe — or when StartPod saw it started).
func (in *instance) timed(l kube.Lifecycle, started time.Time) {
	in.MarkAt(vocab.Create, l.Observed[kube.Created])
	in.MarkAt(vocab.Assigned, l.Observed[kube.Scheduled])
	in.MarkAt(vocab.Preparing, l.Observed[kube.Initialized])
	in.MarkAt(vocab.Starting, l.Observed[kube.SandboxReady])
	run := l.Observed[kube.ContainersReady]
	if run.IsZero() {
		run = started
	}
	in.MarkAt(vocab.Start, run)
}

// podSpec is the pod of an instance: the agent image and its invocation,
// labels, node, network and limits.
func (p *Platform) podSpec(spec platform.InstanceSpec) (kube.PodSpec, kube.Node, error) {
	p.mu.Lock()
	if p.closed || !p.prepared {
		p.mu.Unlock()
		return kube.PodSpec{}, kube.Node{}, errors.New("kubernetes platform: Start before Prepare or after Close")
	}
	labels := maps.Clone(p.setup.Labels)
	ns := p.ns
	pull := "" // Never: imported into the nodes
	if p.registry != nil {
		pull = "IfNotPresent" // by digest, from the registry
	}
	image, handOver, err := p.imageLocked(spec.Name, spec.Image)
	if err != nil {
		p.mu.Unlock()
		return kube.PodSpec{}, kube.Node{}, err
	}
	sidecars, err := p.sidecarsLocked(spec)
	p.mu.Unlock()
	if err != nil {
		return kube.PodSpec{}, kube.Node{}, err
	}
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, spec.Labels)
	for k, v := range labels {
		if !labelValue.MatchString(v) {
			delete(labels, k) // not a label value Kubernetes takes; the campaign's own are kept by kube
		}
	}
	nd, err := p.node(spec)
	if err != nil {
		return kube.PodSpec{}, kube.Node{}, err
	}
	switch spec.Storage {
	case "", vocab.Layer:
	default:
		return kube.PodSpec{}, kube.Node{}, fmt.Errorf("kubernetes: no storage %s here", spec.Storage)
	}
	agent := spec.Agent
	if fronts(spec) {
		agent.ProbePort = platform.ProbePort // its Service's probe (front)
	}
	ps := kube.PodSpec{Name: kube.PodName(spec.Name), Namespace: ns, Node: nd.Name, Image: image,
		Args: agent.Args(), Env: env(append(agent.Env(), handOver...)), Labels: labels, PullPolicy: pull, RunToCompletion: true, Sidecars: sidecars}
	switch spec.Network {
	case vocab.Host:
		ps.HostNetwork = true
	case vocab.Pod, "":
	case vocab.Service, vocab.NodePort:
		// On the pod network; a server is fronted by a Service that
		// selects its pod alone.
		ps.Labels[labelPod] = ps.Name
		for _, m := range spec.Publish {
			if m.Proto != "tcp" {
				return kube.PodSpec{}, kube.Node{}, fmt.Errorf("kubernetes: %s listens on port %s, and ctrbench fronts TCP ports only (network %s): use network pod", spec.Name, m, spec.Network)
			}
		}
	default:
		return kube.PodSpec{}, kube.Node{}, fmt.Errorf("kubernetes: no network %s here (it gives %s, %s, %s and %s)", spec.Network, vocab.Pod, vocab.Host, vocab.Service, vocab.NodePort)
	}
	if r := spec.Ready; r != nil && spec.Agent.Kind == invocation.Run {
		// The kubelet probes the server as it would a Deployment's: the
		// pod is Ready, and a Service sends it traffic, once it answers.
		ps.Readiness = &kube.Probe{TCPPort: int32(r.Port), HTTPPath: r.Path}
	}
	if ps.Requests, ps.Limits, err = resources(spec.Limits, spec.Options[FQoS]); err != nil {
		return kube.PodSpec{}, kube.Node{}, fmt.Errorf("kubernetes: %s: %w", spec.Name, err)
	}
	return ps, nd, nil
}

// sidecarsLocked are the containers of the agents beside spec's.
func (p *Platform) sidecarsLocked(spec platform.InstanceSpec) ([]kube.Sidecar, error) {
	sidecars := make([]kube.Sidecar, len(spec.Beside))
	for i, b := range spec.Beside {
		ref, handOver, err := p.imageLocked(spec.Name+" "+b.Name, b.Image)
		if err != nil {
			return nil, err
		}
		sidecars[i] = kube.Sidecar{Name: b.Name, Image: ref, Args: b.Agent.Args(), Env: env(append(b.Agent.Env(), handOver...))}
		if sidecars[i].Requests, sidecars[i].Limits, err = resources(b.Limits, spec.Options[FQoS]); err != nil {
			return nil, fmt.Errorf("kubernetes: %s, %s beside it: %w", spec.Name, b.Name, err)
		}
	}
	return sidecars, nil
}

// readinessText is a readiness probe as the record says it: "http
// :8080/index.html" or "tcp :6379".
func readinessText(r *kube.Probe) string {
	if r.HTTPPath != "" {
		return fmt.Sprintf("http :%d%s", r.TCPPort, r.HTTPPath)
	}
	return fmt.Sprintf("tcp :%d", r.TCPPort)
}

// imageLocked is the image a container of instance name runs — the agent
// image, or the user's image img with the agent put in — and what its
// agent is handed over of the image (its command, its working directory).
func (p *Platform) imageLocked(name string, img *platform.Image) (ref string, handOver []string, err error) {
	if img == nil {
		return p.image, nil, nil
	}
	u, ok := p.users[img.Key()]
	if !ok {
		return "", nil, fmt.Errorf("kubernetes: instance %s: image %s not prepared (Setup.Images lacks it)", name, img)
	}
	return u.ref, invocation.HandOver(u.workdir, u.command), nil
}

// labelValue is what Kubernetes takes as a label's value.
var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// env is NAME=value pairs as a map.
func env(pairs []string) map[string]string {
	m := map[string]string{}
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// IP implements platform.Instance: the pod's address (its node's on the
// host network).
func (in *instance) IP() string { return in.pod.IP }

// NetNSPath implements platform.Instance: none ctrbench wires (a pod's
// network is its node's CNI's).
func (in *instance) NetNSPath() string { return "" }

// Stop implements platform.Instance: the pod is deleted with a grace
// period, so the agent gets SIGTERM and time to print its result.
func (in *instance) Stop(ctx context.Context) error {
	in.mu.Lock()
	in.stopping = true
	in.mu.Unlock()
	return in.p.c.StopPod(ctx, in.pod, stopGrace)
}

// Remove implements platform.Instance: the pod goes at once.
func (in *instance) Remove(ctx context.Context) error {
	in.mu.Lock()
	if in.removed {
		in.mu.Unlock()
		return nil
	}
	in.removed, in.stopping = true, true
	cancel := in.cancel
	in.mu.Unlock()
	err := in.p.c.DeletePod(context.WithoutCancel(ctx), in.pod)
	if in.svc != nil {
		err = errors.Join(err, in.p.c.DeleteService(context.WithoutCancel(ctx), in.svc))
	}
	if cancel != nil {
		cancel()
	}
	if in.follower != nil {
		in.follower.close()
	}
	for _, s := range in.beside {
		s.close()
	}
	in.Mark(vocab.Remove)
	in.p.mu.Lock()
	delete(in.p.live, in)
	in.p.mu.Unlock()
	return err
}

// Seen implements platform.Seer: the pod, its node and address.
func (in *instance) Seen() map[string]string { return maps.Clone(in.seen) }
