package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/platform/nested"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// WorkRoot holds, per campaign, what an emulated swarm's nodes share with
// the machine: their engines' API sockets and the saved agent image.
const WorkRoot = "/var/lib/ctrbench/swarm"

// joinTimeout bounds how long the emulated nodes may take to be ready
// in the swarm.
const joinTimeout = 2 * time.Minute

// settleTimeout bounds how long a Start waits for the tasks of services
// removed before it to leave their nodes.
const settleTimeout = time.Minute

// Platform runs instances as swarm services, for one campaign.
type Platform struct {
	binary string
	engine platform.Engine
	remote bool

	mu       sync.Mutex
	setup    platform.Setup
	prepared bool
	closed   bool
	mgr      *engine.Swarm
	state    engine.SwarmState
	nodes    []node // node i+1
	byID     map[string]node
	imageID  string // the agent image, by ID: nodes never pull
	// users are the users' images with the agent put in, by
	// platform.Image.Key, each with its ID in userIDs: on every node.
	users    map[string]engine.UserImage
	userIDs  map[string]string
	networks map[vocab.Network]engine.Overlay
	live     map[*instance]bool
	services []string // every service made, for Close to see them gone
	// removed are the services removed since the last Start settled:
	// their tasks may still be on their nodes (see settle).
	removed []string
	// removedOn are their containers on an emulated swarm's nodes, which
	// the node engines remove a few seconds after the manager forgot the
	// task.
	removedOn []nodeContainer
	settleMu  sync.Mutex // one settle at a time
	rate      vocab.Rate // the nodes' egress shaping (the zero Rate: none)
	info      map[string]string

	// Emulated here: the engine containers and their platform.
	emu   *nested.Platform
	emuNd []*nested.Node
	// On a user's swarm: the image this run loaded into the manager (to
	// remove at the end), and the engine that built it.
	loaded string
	build  *engine.Engine
}

// node is one node of the swarm as placement sees it.
type node struct {
	index              int
	id, hostname, addr string
	labels             map[string]string
	engine             *engine.Swarm // its own engine, where reachable (emulated)
}

var _ platform.Platform = (*Platform)(nil)

// Open makes the platform: on the swarm whose manager cfg.Engine (or the
// environment) names, or, when none is named, on one it will emulate.
func Open(ctx context.Context, cfg platform.Config) (*Platform, error) {
	p := &Platform{binary: cfg.Binary, engine: cfg.Engine, remote: !cfg.Engine.IsZero() || remoteNamed(),
		networks: map[vocab.Network]engine.Overlay{}, live: map[*instance]bool{}, byID: map[string]node{}, info: map[string]string{}}
	if !p.remote {
		if err := engine.Available(ctx); err != nil {
			return nil, fmt.Errorf("swarm: the emulated swarm's nodes are containers of this machine's Docker Engine: %w", err)
		}
		emu, err := nested.NewNodes(cfg.Binary, WorkRoot)
		if err != nil {
			return nil, err
		}
		p.emu = emu
		return p, nil
	}
	mgr, err := engine.DialSwarm(cfg.Engine)
	if err != nil {
		return nil, err
	}
	st, err := mgr.State(ctx)
	if err != nil {
		mgr.Close()
		return nil, fmt.Errorf("swarm: %w", err)
	}
	if !st.Manager || st.State != "active" {
		mgr.Close()
		return nil, fmt.Errorf("swarm: engine %s is not a swarm manager (its swarm state is %s): point --docker-host at a manager of your swarm, or name no engine (no --docker-host, DOCKER_HOST or DOCKER_CONTEXT) to let ctrbench emulate a swarm here", mgr.Host, st.State)
	}
	p.mgr, p.state = mgr, st
	return p, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "swarm" }

// Prepare builds or finds the cluster, brings the agent image to every
// node and creates the overlay networks the campaign asks for.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("swarm: Prepare after Close")
	}
	if !p.prepared {
		p.setup = s
		if p.mgr != nil && p.mgr.Warning != "" && s.Progress != nil {
			fmt.Fprintf(s.Progress, "swarm: warning: %s\n", p.mgr.Warning)
		}
		want := max(1, s.Hosts)
		var err error
		if p.remote {
			err = p.findNodes(ctx, want)
			if err == nil {
				err = p.bringImage(ctx, s)
			}
		} else {
			err = p.emulate(ctx, s, want)
		}
		if err != nil {
			return err
		}
		p.prepared = true
	}
	for _, n := range s.Networks {
		if n != vocab.Overlay && n != vocab.OverlayEncrypted {
			continue
		}
		if _, ok := p.networks[n]; ok {
			continue
		}
		name := swarmName("ctrbench-" + s.CampaignID + "-" + string(n))
		ov, err := p.mgr.CreateOverlay(ctx, name, s.Labels, n == vocab.OverlayEncrypted, s.Subnets.SwarmSubnets())
		if err != nil {
			return err
		}
		p.networks[n] = ov
		fmt.Fprintf(s.Notes(), "swarm: %s network %s (driver %s, subnet %s, MTU %s, VXLAN UDP %d)\n", n, name, ov.Driver, ov.Subnet, ov.MTU, p.state.VXLANPort)
		p.info["swarm.network."+string(n)] = fmt.Sprintf("%s driver %s subnet %s mtu %s", name, ov.Driver, ov.Subnet, ov.MTU)
	}
	return nil
}

// emulate builds a swarm of want nodes here.
func (p *Platform) emulate(ctx context.Context, s platform.Setup, want int) error {
	start := time.Now()
	nodes, err := p.startNodes(ctx, s, want)
	if err != nil {
		return err
	}
	engines, err := p.formSwarm(ctx, nodes)
	if err != nil {
		return err
	}
	ids, err := p.labelNodes(ctx, engines)
	if err != nil {
		return err
	}
	all, err := p.mgr.Nodes(ctx)
	if err != nil {
		return err
	}
	for i, id := range ids {
		for _, n := range all {
			if n.ID == id {
				p.addNode(node{index: i + 1, id: id, hostname: n.Hostname, addr: n.Addr, labels: n.Labels, engine: engines[i]})
			}
		}
	}
	if p.state, err = p.mgr.State(ctx); err != nil {
		return err
	}
	if p.imageID, err = p.mgr.ImageID(ctx, nodes[0].Engine.AgentImage()); err != nil {
		return fmt.Errorf("swarm: the agent image in node 1: %w", err)
	}
	// Each node's engine loaded the users' images as a nested parent does.
	for key, u := range p.emu.UserImages() {
		if err := p.addUser(ctx, key, u); err != nil {
			return err
		}
	}
	secs := time.Since(start).Seconds()
	p.info["swarm.cluster"] = fmt.Sprintf("emulated: %d nodes, each a Docker Engine in a container of this machine's engine (own network namespace, data root on tmpfs, containerd), on the campaign's bridge", want)
	p.info["swarm.setup_seconds"] = strconv.FormatFloat(secs, 'f', 1, 64)
	fmt.Fprintf(s.Notes(), "swarm: emulated %d nodes (manager %s at %s) in %.1f s; agent image %s loaded in each\n", want, p.nodes[0].hostname, p.nodes[0].addr, secs, shortID(p.imageID))
	return nil
}

// startNodes prepares the node image and starts want emulated nodes at
// once, each a Docker Engine in a container. The nodes that started are
// kept in p.emuNd even when others failed, for Close to remove.
func (p *Platform) startNodes(ctx context.Context, s platform.Setup, want int) ([]*nested.Node, error) {
	es := s
	es.Networks, es.Storages, es.Options = nil, []vocab.Storage{vocab.Layer}, nil
	if err := p.emu.Prepare(ctx, es); err != nil {
		return nil, fmt.Errorf("swarm: preparing the node image: %w", err)
	}
	nodes := make([]*nested.Node, want)
	errs := make([]error, want)
	var wg sync.WaitGroup
	for i := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = p.emu.StartNode(ctx, fmt.Sprintf("ctrbench-%s-node%d", s.CampaignID, i+1), fmt.Sprintf("node%d", i+1), s.Labels)
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n != nil {
			p.emuNd = append(p.emuNd, n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("swarm: starting the emulated nodes: %w", err)
	}
	return nodes, nil
}

// formSwarm makes the nodes one swarm: the first one's engine initialises
// it and becomes p.mgr, the others join it at once. It returns each node's
// engine, in the nodes' order.
func (p *Platform) formSwarm(ctx context.Context, nodes []*nested.Node) ([]*engine.Swarm, error) {
	want := len(nodes)
	engines := make([]*engine.Swarm, want)
	for i, n := range nodes {
		sw, err := engine.DialSwarm(platform.Engine{Host: n.Socket})
		if err != nil {
			return nil, err
		}
		engines[i] = sw
	}
	token, err := engines[0].Init(ctx, nodes[0].IP, p.setup.Subnets.Swarm())
	if err != nil {
		return nil, err
	}
	errs := make([]error, want)
	var wg sync.WaitGroup
	for i := 1; i < want; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = engines[i].Join(ctx, nodes[0].IP, token, nodes[i].IP)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	p.mgr = engines[0]
	return engines, nil
}

// labelNodes waits until every node of the swarm is ready and labels each
// with its index (LabelNode), 1 for the manager. It returns the nodes' IDs,
// in the engines' order.
func (p *Platform) labelNodes(ctx context.Context, engines []*engine.Swarm) ([]string, error) {
	ids := make([]string, len(engines))
	for i, e := range engines {
		st, err := e.State(ctx)
		if err != nil {
			return nil, err
		}
		ids[i] = st.NodeID
	}
	if err := p.awaitReady(ctx, ids); err != nil {
		return nil, err
	}
	for i, id := range ids {
		if err := p.mgr.SetNodeLabel(ctx, id, LabelNode, strconv.Itoa(i+1)); err != nil {
			return nil, fmt.Errorf("swarm: labelling node %d: %w", i+1, err)
		}
	}
	return ids, nil
}

// nodeContainer is a task's container on emulated node index.
type nodeContainer struct {
	index int
	id    string
}

// settle waits until the tasks of the services removed so far (the last
// trial's) have left their nodes. The swarm stops a removed service's task
// seconds after the service goes (3-4 s on the development machine: the
// manager forgets the task once its node reports the container stopped)
// and the node's engine removes the container about 2 s later; that
// teardown — the agent's exit, the task's network endpoint and, for the
// last task of an overlay on a node, the overlay's namespace, bridge and
// VXLAN device, the container's removal, the engines' bookkeeping — would
// otherwise run on the same cores during the next trial's measured window
// (it did, 0.8-3 s into every window, before this wait). On an emulated
// swarm it also waits until each node's engine has removed the
// containers; a user's swarm's nodes are not visible from here.
func (p *Platform) settle(ctx context.Context) error {
	p.settleMu.Lock()
	defer p.settleMu.Unlock()
	p.mu.Lock()
	gone, on, mgr, nodes := p.removed, p.removedOn, p.mgr, p.emuNd
	p.removed, p.removedOn = nil, nil
	p.mu.Unlock()
	if len(gone) == 0 || mgr == nil {
		return nil
	}
	if err := mgr.AwaitNoTasks(ctx, gone, settleTimeout); err != nil {
		return fmt.Errorf("swarm: waiting for the tasks of the services removed before this one to leave their nodes: %w", err)
	}
	deadline := time.Now().Add(settleTimeout)
	for _, c := range on {
		if c.index < 1 || c.index > len(nodes) {
			continue
		}
		for nodes[c.index-1].HasContainer(c.id) {
			if time.Now().After(deadline) {
				return fmt.Errorf("swarm: node %d's engine still holds container %s of a removed service after %s", c.index, shortID(c.id), settleTimeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// awaitReady waits until every node is ready in the manager's view.
func (p *Platform) awaitReady(ctx context.Context, ids []string) error {
	deadline := time.Now().Add(joinTimeout)
	for {
		ns, err := p.mgr.Nodes(ctx)
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range ns {
			for _, id := range ids {
				if n.ID == id && n.State == "ready" {
					ready++
				}
			}
		}
		if ready == len(ids) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("swarm: %d of %d nodes ready after %s", ready, len(ids), joinTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *Platform) addNode(n node) {
	p.nodes = append(p.nodes, n)
	p.byID[n.id] = n
}

// findNodes takes a user's swarm's ready, active nodes, by hostname:
// node i of a cell is the i-th of them.
func (p *Platform) findNodes(ctx context.Context, want int) error {
	all, err := p.mgr.Nodes(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, n := range all {
		if n.State != "ready" || n.Availability != "active" {
			continue
		}
		p.addNode(node{index: len(p.nodes) + 1, id: n.ID, hostname: n.Hostname, addr: n.Addr, labels: n.Labels})
		names = append(names, n.Hostname)
	}
	if len(p.nodes) < want {
		return fmt.Errorf("swarm: a cell asks for %d nodes, and the swarm at %s has %d ready and active (%s)", want, p.mgr.Host, len(p.nodes), strings.Join(names, ", "))
	}
	p.info["swarm.cluster"] = fmt.Sprintf("%s: %d ready nodes (%s), engine %s", p.mgr.Host, len(p.nodes), strings.Join(names, ", "), p.state.Version)
	return nil
}

// bringImage builds the agent image in the manager's engine (the build
// context goes over the API: nothing is pulled) unless it is there, and
// checks every node has it: the swarm's workers are not reachable from
// here, and ctrbench uses no registry.
func (p *Platform) bringImage(ctx context.Context, s platform.Setup) error {
	b, err := engine.New(engine.WithEndpoint(p.engine))
	if err != nil {
		return err
	}
	p.build = b
	img, err := b.EnsureAgentImage(ctx, p.binary, s.Tools, s.Labels, s.Notes())
	if err != nil {
		return fmt.Errorf("swarm: the agent image in %s: %w", p.mgr.Host, err)
	}
	if p.imageID, err = p.mgr.ImageID(ctx, img.Tag); err != nil {
		return err
	}
	if !img.Reused {
		p.loaded = p.imageID
	}
	if missing := p.missingOn(ctx, p.imageID); len(missing) > 0 {
		return fmt.Errorf("swarm: the agent image %s (%s) is not on every node: %s. ctrbench uses no registry: load it on each node, e.g. `docker -H %s save %s | docker -H <node> load`", img.Tag, shortID(p.imageID), strings.Join(missing, "; "), p.mgr.Host, img.Tag)
	}
	return p.bringUserImages(ctx, s)
}

// bringUserImages makes each user's image runnable in the manager's engine
// (the agent put in, as on docker) and checks every node holds it: on a
// user's swarm, the user loads it on the workers.
func (p *Platform) bringUserImages(ctx context.Context, s platform.Setup) error {
	for _, img := range s.Images {
		src, err := docker.UserImageSource(img)
		if err != nil {
			return err
		}
		u, err := p.build.EnsureUserImage(ctx, src, p.binary, s.Labels, s.Notes())
		if err != nil {
			return fmt.Errorf("swarm: the user's image %s in %s: %w", img, p.mgr.Host, err)
		}
		if err := p.addUser(ctx, img.Key(), u); err != nil {
			return err
		}
		if missing := p.missingOn(ctx, p.userIDs[img.Key()]); len(missing) > 0 {
			return fmt.Errorf("swarm: the image %s, with ctrbench's agent put in (%s), is not on every node: %s. ctrbench uses no registry: load it on each node, e.g. `docker -H %s save %s | docker -H <node> load`", img, u.Tag, strings.Join(missing, "; "), p.mgr.Host, u.Tag)
		}
	}
	return nil
}

// missingOn probes every node for image (an ID) — one task per node runs
// the agent's `version` from it, so no node pulls — and names the nodes
// where it did not run, with why.
func (p *Platform) missingOn(ctx context.Context, image string) []string {
	var missing []string
	for _, n := range p.nodes {
		if err := p.probe(ctx, n, image); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", n.hostname, err))
		}
	}
	return missing
}

// addUser records a user's image the nodes hold, with its ID there.
func (p *Platform) addUser(ctx context.Context, key string, u engine.UserImage) error {
	id, err := p.mgr.ImageID(ctx, u.Tag)
	if err != nil {
		return fmt.Errorf("swarm: the user's image %s: %w", u.Tag, err)
	}
	if p.users == nil {
		p.users, p.userIDs = map[string]engine.UserImage{}, map[string]string{}
	}
	p.users[key], p.userIDs[key] = u, id
	return nil
}

// probe runs the agent's version from image (an ID) on node n and waits
// for it to end well.
func (p *Platform) probe(ctx context.Context, n node, image string) error {
	name := swarmName(fmt.Sprintf("ctrbench-%s-probe-%s", p.setup.CampaignID, n.id[:min(12, len(n.id))]))
	id, err := p.mgr.CreateService(ctx, engine.ServiceSpec{Name: name, Image: image, Args: []string{"version"}, Labels: p.setup.Labels,
		Network: "host", Constraints: []string{"node.id==" + n.id}})
	if err != nil {
		return err
	}
	p.services = append(p.services, id)
	defer p.mgr.RemoveService(context.WithoutCancel(ctx), id)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		t, ok, err := p.mgr.ServiceTask(ctx, id)
		if err != nil {
			return err
		}
		if ok && t.Terminal() {
			if t.State == "complete" {
				return nil
			}
			return fmt.Errorf("%s: %s", t.State, strings.TrimSpace(t.Err+" "+t.Message))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("the probe task did not end within a minute")
}

// HostAddr implements platform.Platform: the machine is not on the
// swarm's networks.
func (p *Platform) HostAddr(vocab.Network) string { return "" }

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for k, v := range p.info {
		out[k] = v
	}
	out["swarm.engine"] = p.state.Version
	out["swarm.manager"] = p.state.Addr
	out["swarm.vxlan_port"] = strconv.FormatUint(uint64(p.state.VXLANPort), 10)
	for _, n := range p.nodes {
		out["swarm.node"+strconv.Itoa(n.index)] = n.hostname + " " + n.addr
	}
	if p.emu != nil {
		for k, v := range p.emu.Info() {
			if strings.HasPrefix(k, "docker.") || strings.HasPrefix(k, "nested.privileges") {
				out["swarm.machine."+k] = v
			}
		}
	}
	return out
}

// Close removes every service still there, the networks, the image this
// run loaded into a user's swarm, and an emulated swarm's nodes.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	live := make([]*instance, 0, len(p.live))
	for in := range p.live {
		live = append(live, in)
	}
	p.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	var errs []error
	if p.emu != nil {
		// Everything is inside the nodes: they go, and it goes with them.
		for _, n := range p.emuNd {
			errs = append(errs, n.Remove(ctx))
		}
		for _, n := range p.nodes {
			if n.engine != nil {
				n.engine.Close()
			}
		}
		errs = append(errs, p.emu.Close(ctx))
		return errors.Join(errs...)
	}
	for _, in := range live {
		errs = append(errs, in.Remove(ctx))
	}
	if p.mgr != nil {
		p.mu.Lock()
		services := p.services
		p.mu.Unlock()
		errs = append(errs, p.mgr.AwaitNoTasks(ctx, services, time.Minute))
		for _, ov := range p.networks {
			errs = append(errs, p.mgr.RemoveNetwork(ctx, ov.ID))
		}
		if p.loaded != "" {
			errs = append(errs, p.mgr.RemoveImage(ctx, p.loaded))
		}
		errs = append(errs, p.mgr.Close())
	}
	if p.build != nil {
		errs = append(errs, p.build.Close())
	}
	return errors.Join(errs...)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return id[:min(12, len(id))]
}

// Manager is the address of the swarm manager's engine: on an emulated
// swarm, node 1's API socket on this machine.
func (p *Platform) Manager() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mgr == nil {
		return ""
	}
	return p.mgr.Host
}

// maxName is the longest name the swarm takes for a service or network
// (a DNS label).
const maxName = 63

// swarmName is name, or when longer than the swarm allows, "ctb-", 8 hex
// digits of its hash and as much of its end (the trial, role and run) as
// fits: still unique, still readable.
func swarmName(name string) string {
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	head := "ctb-" + hex.EncodeToString(sum[:4]) + "-"
	tail := strings.TrimLeft(name[len(name)-(maxName-len(head)):], "-_.")
	return head + tail
}

// NodeSocket is the API address of emulated node i's engine ("" on a
// user's swarm, whose nodes are not reachable from here).
func (p *Platform) NodeSocket(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < 1 || i > len(p.nodes) || p.nodes[i-1].engine == nil {
		return ""
	}
	return p.nodes[i-1].engine.Host
}

// SetUnderlayRate implements platform.Shaper: on an emulated swarm each
// node's egress on the campaign's bridge (its eth0, which carries the
// swarm's VXLAN and the host network's traffic) is shaped with tbf, as the
// network lab shapes emulated hosts' underlay. A user's swarm's network is
// what it is.
func (p *Platform) SetUnderlayRate(rate vocab.Rate) error {
	if rate.Unlimited() {
		rate = vocab.Rate{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if rate == p.rate {
		return nil
	}
	if p.emu == nil {
		return fmt.Errorf("swarm: underlay %s: the links between a user's swarm's nodes are not ctrbench's to shape", rate)
	}
	for i, n := range p.emuNd {
		if n.NetNS == "" {
			return fmt.Errorf("swarm: node %d: no network namespace to shape", i+1)
		}
		if err := netlab.ShapeEgress(n.NetNS, "eth0", rate); err != nil {
			return fmt.Errorf("swarm: shaping node %d's egress to %q: %w", i+1, rate.String(), err)
		}
	}
	p.rate = rate
	p.info["swarm.underlay.rate"] = netlab.EgressRateText(rate)
	return nil
}

// Ping implements platform.Pinger: the manager's engine answers, and on
// an emulated swarm every node's (a worker whose engine died would make
// every task placed on it wait for ever).
func (p *Platform) Ping(ctx context.Context) error {
	p.mu.Lock()
	mgr := p.mgr
	nodes := slices.Clone(p.nodes)
	p.mu.Unlock()
	if mgr == nil {
		return nil
	}
	if err := mgr.Ping(ctx); err != nil {
		return fmt.Errorf("the manager: %w", err)
	}
	for _, n := range nodes {
		if n.engine == nil {
			continue
		}
		if err := n.engine.Ping(ctx); err != nil {
			return fmt.Errorf("node %d (%s): %w", n.index, n.hostname, err)
		}
	}
	return nil
}

// EndOneAtATime implements platform.Serial: by the version of the swarm's
// engines (the manager's; an emulated swarm's nodes run the machine's
// dockerd), unknown before Prepare and then the safe side.
func (p *Platform) EndOneAtATime() bool { return engine.EndsTogetherDeadlock(p.state.Version) }
