package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// instance is one pod running one agent.
type instance struct {
	*platform.Clock
	p    *Platform
	pod  *kube.Pod
	node kube.Node
	seen map[string]string

	stdout io.ReadCloser // the pod's log, followed

	svc       *kube.Service     // a fronted server's Service
	published string            // where it is reached through it
	probe     string            // and its probe port
	ports     map[string]string // each port it is reached at ("8080/tcp" → HOST:PORT)

	mu      sync.Mutex
	code    int
	waitErr error
	// stopping: ctrbench asked for the pod's end (Stop, Remove);
	// vanished: it was being deleted when its agent ended, and not by
	// ctrbench.
	stopping, vanished bool
	done               chan struct{} // closed when the agent's exit is known
	removed            bool
	cancel             context.CancelFunc // ends the exit watch
}

// Start implements platform.Platform: a pod of the agent on the node the
// spec places it on (or the scheduler's choice); it returns once the
// agent runs (or has ended).
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
	in := &instance{Clock: platform.NewClock(requested), p: p, pod: pod, node: nd, done: make(chan struct{})}
	in.timed(pod.Lifecycle, started)
	p.mu.Lock()
	p.live[in] = true
	p.mu.Unlock()
	// The log and the exit are followed until Remove (not the start's
	// deadline).
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	in.cancel = wcancel
	stream, err := p.c.FollowLogs(wctx, pod)
	if err != nil {
		wcancel()
		in.cancel = nil
		return nil, errors.Join(fmt.Errorf("kubernetes: %w", err), in.Remove(context.WithoutCancel(ctx)))
	}
	in.stdout = newMended(wctx, stream, in.done, func(ctx context.Context) (string, error) { return p.c.Logs(ctx, pod) })
	go in.watchExit(wctx)
	in.seen = map[string]string{"kubernetes.pod": pod.Namespace + "/" + pod.Name, "kubernetes.node": pod.Node, "kubernetes.pod_ip": pod.IP, "kubernetes.qos_class": pod.QOS}
	if spec.Image != nil {
		in.seen[platform.SeenImage], in.seen[platform.SeenImageID] = spec.Image.String(), ps.Image
	}
	if fronts(spec) {
		if err := in.front(cctx, spec); err != nil {
			return nil, errors.Join(err, in.Remove(context.WithoutCancel(ctx)))
		}
	}
	return in, nil
}

var (
	_ platform.Fronted = (*instance)(nil)
	_ platform.Seer    = (*instance)(nil)
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
	image, ns := p.image, p.ns
	pull := "" // Never: imported into the nodes
	if p.registry != nil {
		pull = "IfNotPresent" // by digest, from the registry
	}
	var handOver []string
	if spec.Image != nil {
		u, ok := p.users[spec.Image.Key()]
		if !ok {
			p.mu.Unlock()
			return kube.PodSpec{}, kube.Node{}, fmt.Errorf("kubernetes: instance %s: image %s not prepared (Setup.Images lacks it)", spec.Name, spec.Image)
		}
		image, handOver = u.ref, invocation.HandOver(u.workdir, u.command)
	}
	p.mu.Unlock()
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
	ps := kube.PodSpec{Name: podName(spec.Name), Namespace: ns, Node: nd.Name, Image: image,
		Args: agent.Args(), Env: env(append(agent.Env(), handOver...)), Labels: labels, PullPolicy: pull, RunToCompletion: true}
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
	if ps.Requests, ps.Limits, err = resources(spec.Limits, spec.Options[FQoS]); err != nil {
		return kube.PodSpec{}, kube.Node{}, fmt.Errorf("kubernetes: %s: %w", spec.Name, err)
	}
	return ps, nd, nil
}

// labelValue is what Kubernetes takes as a label's value.
var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// podName is an instance's name as a pod's: a DNS-1123 label.
func podName(name string) string {
	n := strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// env is NAME=value pairs as a map.
func env(pairs []string) map[string]string {
	m := map[string]string{}
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// watchExit waits for the agent's exit code, as the pod's status says it.
// A pod being deleted when its agent ended, and not by ctrbench (Stop,
// Remove), was removed by something else: an eviction, a kubectl delete.
func (in *instance) watchExit(ctx context.Context) {
	code, deleted, err := in.p.c.WaitEnd(ctx, in.pod)
	in.Mark(vocab.Exit)
	in.mu.Lock()
	in.code, in.waitErr = code, err
	in.vanished = deleted && !in.stopping
	in.mu.Unlock()
	close(in.done)
}

// Stdout implements platform.Instance: the pod's log, which holds the
// agent's standard output and error, line by line.
func (in *instance) Stdout() io.Reader { return in.stdout }

// IP implements platform.Instance: the pod's address (its node's on the
// host network).
func (in *instance) IP() string { return in.pod.IP }

// NetNSPath implements platform.Instance: none ctrbench wires (a pod's
// network is its node's CNI's).
func (in *instance) NetNSPath() string { return "" }

// Wait implements platform.Instance. A pod's log holds the agent's
// standard error among its output: a failed agent's Stderr is the log's
// last lines.
func (in *instance) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return platform.Exit{}, ctx.Err()
	}
	in.mu.Lock()
	code, err, vanished := in.code, in.waitErr, in.vanished
	in.mu.Unlock()
	if err != nil {
		return platform.Exit{Code: -1, Stderr: err.Error(), Vanished: true}, nil
	}
	ex := platform.Exit{Code: code, Vanished: vanished}
	if vanished {
		ex.Stderr = fmt.Sprintf("pod %s/%s was deleted by something else than ctrbench (an eviction, kubectl delete) while its agent ran", in.pod.Namespace, in.pod.Name)
		return ex, nil
	}
	if code != 0 {
		tail, terr := in.p.c.Tail(context.WithoutCancel(ctx), in.pod, stderrLines)
		if terr != nil {
			tail = terr.Error()
		}
		ex.Stderr = tail
	}
	return ex, nil
}

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
	in.mu.Unlock()
	err := in.p.c.DeletePod(context.WithoutCancel(ctx), in.pod)
	if in.svc != nil {
		err = errors.Join(err, in.p.c.DeleteService(context.WithoutCancel(ctx), in.svc))
	}
	if in.cancel != nil {
		in.cancel()
		<-in.done
	}
	if in.stdout != nil {
		in.stdout.Close()
	}
	in.Mark(vocab.Remove)
	in.p.mu.Lock()
	delete(in.p.live, in)
	in.p.mu.Unlock()
	return err
}

// Seen implements platform.Seer: the pod, its node and address.
func (in *instance) Seen() map[string]string { return maps.Clone(in.seen) }
