package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/userimage"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Platform is one campaign's use of a cluster: its namespace, the nodes a
// cell's hosts are (node i+1 is the i-th Ready node by name), the agent
// image on them.
type Platform struct {
	binary   string
	c        *kube.Client
	registry *userimage.Registry // where images go for the nodes to pull (--registry); nil: imported

	mu       sync.Mutex
	setup    platform.Setup
	ns       string
	nodes    []kube.Node
	image    string               // the agent image's reference, as pods name it
	users    map[string]userImage // users' images with the agent, by Image.Key
	info     map[string]string
	live     map[*instance]bool
	prepared bool
	closed   bool
	rate     vocab.Rate       // the links between the nodes are shaped to (Shape)
	splices  []*netlab.Splice // the delay lines on the links, when the campaign delays
}

var _ platform.Platform = (*Platform)(nil)

// RegistryEnv names the registry images are pushed to for the nodes to
// pull (--registry): HOST[:PORT][/PREFIX], http:// for one without TLS.
// Unset: images are imported into the nodes' containerd.
const RegistryEnv = "CTRBENCH_REGISTRY"

// Open connects to the cluster the kubeconfig names and checks it
// answers.
func Open(ctx context.Context, cfg platform.Config) (*Platform, error) {
	c, err := kube.Connect("", os.Getenv(kube.ContextEnv))
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.Version(vctx)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	p := &Platform{binary: cfg.Binary, c: c, live: map[*instance]bool{},
		info: map[string]string{"kubernetes.version": v, "kubernetes.server": c.Host()}}
	if r := os.Getenv(RegistryEnv); r != "" {
		reg, err := userimage.ParseRegistry(r)
		if err != nil {
			return nil, fmt.Errorf("kubernetes: --registry: %w", err)
		}
		p.registry = &reg
		p.info["kubernetes.registry"] = reg.String()
	}
	return p, nil
}

var _ platform.Pinger = (*Platform)(nil)

// Ping implements platform.Pinger: the API server answers (its version),
// so the campaign's watchdog tells a frozen or gone control plane from a
// slow trial.
func (p *Platform) Ping(ctx context.Context) error {
	if _, err := p.c.Version(ctx); err != nil {
		return fmt.Errorf("kubernetes: the API server at %s: %w", p.c.Host(), err)
	}
	return nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "kubernetes" }

// Prepare implements platform.Platform: the campaign's namespace, its
// nodes (Ready ones: as many as the cell asks), and the agent image on
// each.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	nodes, err := p.readyNodes(ctx, max(s.Hosts, 1))
	if err != nil {
		return err
	}
	if err := checkSpans(nodes, s.Spans, p.c.Host()); err != nil {
		return err
	}
	// A campaign killed while it shaped the links left them shaped: each
	// campaign begins unshaped.
	if err := shapeNodes(nodes, vocab.Rate{}); err != nil {
		return err
	}
	splices, err := spliceNodes(nodes, s.Delays)
	p.mu.Lock()
	p.splices = splices
	p.mu.Unlock()
	if err != nil {
		return err
	}
	ns, err := p.c.EnsureNamespace(ctx, s.CampaignID)
	if err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	p.mu.Lock()
	p.setup, p.ns, p.nodes = s, ns, nodes
	p.mu.Unlock()
	ref, err := bringAgent(ctx, p.c, p.registry, p.binary, s.Tools, nodes, s.Notes())
	if err != nil {
		return err
	}
	users := map[string]userImage{}
	for _, img := range s.Images {
		if _, done := users[img.Key()]; done {
			continue
		}
		if users[img.Key()], err = bringUser(ctx, p.c, p.registry, p.binary, img, s.Saver(), nodes, s.Notes()); err != nil {
			return err
		}
	}
	var cpus []string
	for _, n := range nodes {
		cpus = append(cpus, strconv.FormatFloat(float64(n.CPUMilli)/1000, 'g', -1, 64))
	}
	p.describe(ctx, nodes[0].Name)
	p.mu.Lock()
	defer p.mu.Unlock()
	maps.Copy(p.info, describeNodes(nodes))
	p.image, p.users, p.prepared = ref, users, true
	p.info["kubernetes.nodes"] = strconv.Itoa(len(nodes))
	p.info["kubernetes.node_cpus"] = strings.Join(cpus, ",")
	p.info["kubernetes.namespace"] = ns
	p.info["kubernetes.runtime"] = nodes[0].Runtime
	p.info["kubernetes.kubelet"] = nodes[0].Kubelet
	p.info["kubernetes.agent_image"] = ref
	return nil
}

// described are the node annotations the campaign's record keeps, by
// their key in it: what a cluster says of itself that the API does not
// (scripts/k8s.sh's nodes say so: that they are emulated, their runc's
// version and their CNI plugins' package's; their kube-proxy mode, CNI and
// CPU manager policy are labels, describeNodes).
var described = map[string]string{
	"ctrbench.io/emulated":    "kubernetes.nodes_emulated",
	"ctrbench.io/runc":        "kubernetes.runc",
	"ctrbench.io/cni-plugins": "kubernetes.cni_plugins",
}

// describe records what node says of the cluster in its annotations.
func (p *Platform) describe(ctx context.Context, node string) {
	anns, err := p.c.NodeAnnotations(ctx, node)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ann, key := range described {
		if v := anns[ann]; v != "" {
			p.info[key] = v
		}
	}
}

// readyNodes are the cluster's Ready nodes, by name; an error when fewer
// than want.
func (p *Platform) readyNodes(ctx context.Context, want int) ([]kube.Node, error) {
	all, err := p.c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	var nodes []kube.Node
	for _, n := range all {
		if n.Ready {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) < want {
		return nil, fmt.Errorf("kubernetes: a cell asks for %d nodes and the cluster at %s has %d Ready (of %d)", want, p.c.Host(), len(nodes), len(all))
	}
	return nodes, nil
}

// node is the node an instance is placed on: by name, or by index among
// the nodes its levels of the node factors ask for (kube_proxy, cni); ""
// (the scheduler's choice) when neither says.
func (p *Platform) node(spec platform.InstanceSpec) (kube.Node, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	nodes, want := matching(p.nodes, spec.Options)
	of := ""
	if want != "" {
		of = " labelled " + want
	}
	switch {
	case spec.Node != "":
		for _, n := range nodes {
			if n.Name == spec.Node {
				return n, nil
			}
		}
		return kube.Node{}, fmt.Errorf("kubernetes: %s is placed on node %s, which is not a Ready node of the cluster%s", spec.Name, spec.Node, of)
	case spec.Host > len(nodes):
		return kube.Node{}, fmt.Errorf("kubernetes: %s is placed on node %d of the Ready nodes%s, and the cluster has %d", spec.Name, spec.Host, of, len(nodes))
	case spec.Host > 0:
		return nodes[spec.Host-1], nil
	case want != "" && len(nodes) == 0:
		return kube.Node{}, fmt.Errorf("kubernetes: %s asks for a node%s, and the cluster has no such Ready node", spec.Name, of)
	case want != "":
		return nodes[0], nil
	}
	return kube.Node{}, nil
}

// nodeNamed is the campaign's node named name.
func (p *Platform) nodeNamed(name string) (kube.Node, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n, ok := p.named(name); ok {
		return n, nil
	}
	return kube.Node{}, fmt.Errorf("kubernetes: node %s is not one of the campaign's Ready nodes", name)
}

// named finds the campaign's node named name; p.mu held.
func (p *Platform) named(name string) (kube.Node, bool) {
	for _, n := range p.nodes {
		if n.Name == name {
			return n, true
		}
	}
	return kube.Node{}, false
}

// HostAddr implements platform.Platform: a pod's host is its node, never
// this machine.
func (p *Platform) HostAddr(vocab.Network) string { return "" }

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.info)
}

// Close implements platform.Platform: the pods still there, then the
// namespace with whatever else is in it.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	live := make([]*instance, 0, len(p.live))
	for in := range p.live {
		live = append(live, in)
	}
	ns, nodes, shaped, splices := p.ns, p.nodes, !p.rate.Unlimited(), p.splices
	p.splices = nil
	p.mu.Unlock()
	var errs []error
	for _, in := range live {
		errs = append(errs, in.Remove(ctx))
	}
	if shaped {
		errs = append(errs, shapeNodes(nodes, vocab.Rate{}))
	}
	errs = append(errs, unsplice(splices))
	if ns != "" {
		errs = append(errs, p.c.DeleteNamespace(context.WithoutCancel(ctx), ns))
	}
	return errors.Join(errs...)
}
