// Package nested is S1's nested-container platform: every instance is a
// child container inside a parent container that runs a Docker Engine of
// its own (dockerd, containerd, runc). Parents are containers of the
// machine's engine, started from a parent image built locally FROM scratch
// (the engine and its libraries beside the ctrbench binary, which is the
// parent's init: `agent parent`); children run the normal agent image,
// brought into each parent's engine by loading the saved image or from a
// read-only store prepared once per campaign. Limits on the parent bound
// its children (their cgroups are below the parent's); a child's own
// limits apply inside.
//
// Everything the Docker Engine API does, for the parents and inside them,
// goes through package engine, the one that imports the SDK: the
// parents are docker-platform instances of the machine's engine, the
// children docker-platform instances of their parent's.
package nested

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/nestedparent"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// WorkRoot holds, per campaign, what the parents share with the host: their
// API sockets, the saved agent image, the preloaded image store.
const WorkRoot = "/var/lib/ctrbench/nested"

// ParentRepository names the parent image.
const ParentRepository = "ctrbench-parent"

// Inside a parent.
const (
	sockMount  = "/ctb"
	storeMount = "/preloaded"
	dataRoot   = "/var/lib/docker"
)

// engineTools are the parent image's programs: the engine and what it
// runs (image.EnginePrograms), and iptables for its bridge's NAT.
var engineTools = append(slices.Clone(image.EnginePrograms),
	"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore")

// xtablesDir holds iptables' extensions, loaded at run time.
const xtablesDir = "/usr/lib/x86_64-linux-gnu/xtables"

// Platform runs children in parents, for one campaign.
type Platform struct {
	binary string
	outer  *docker.Platform

	mu       sync.Mutex
	setup    platform.Setup
	root     string // WorkRoot, or another platform's root for its engine containers
	work     string // root/<campaign>
	agentTar string // the saved agent image
	// userTars are the users' images as the machine's engine made them
	// runnable (the agent put in), saved for the parents to load, by
	// platform.Image.Key; users are those images, by the same key.
	userTars    map[string]string
	users       map[string]engine.UserImage
	parentImage string
	store       *storeOnce
	groups      map[string]*parent             // per trial and options: the parent taking children
	subnets     [subnets.InnerBridgeCount]bool // inner bridge slots in use (Pool.InnerBridge)
	parents     map[*parent]bool               // every live parent, for Close
	closed      bool
}

var _ platform.Platform = (*Platform)(nil)

// New returns a nested platform over the machine's Docker Engine.
func New(binary string) (*Platform, error) {
	outer, err := docker.New(docker.WithBinary(binary))
	if err != nil {
		return nil, err
	}
	return &Platform{binary: binary, outer: outer, root: WorkRoot,
		groups: map[string]*parent{}, parents: map[*parent]bool{}}, nil
}

// NewNodes returns a nested platform that another platform makes nodes
// with (StartNode): its campaign directories (sockets, the saved agent
// image) are below root, apart from the nested platform's own, so both
// can serve one campaign.
func NewNodes(binary, root string) (*Platform, error) {
	p, err := New(binary)
	if err != nil {
		return nil, err
	}
	p.root = root
	return p, nil
}

// RemoveWork removes a campaign's directory made below a root (Clean's
// remove function for NewNodes' roots).
func RemoveWork(dir string) error { return removeWork(dir) }

// Name implements platform.Platform.
func (p *Platform) Name() string { return "nested" }

// Prepare builds the agent image and the parent image in the machine's
// engine, saves the agent image for the parents to load, and makes the
// campaign's bridge for the parents.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	if err := p.prepare(ctx, s); err != nil {
		return err
	}
	if slices.Contains(s.Options[FImage], ImagePreloaded) {
		// Once per campaign, before any trial: a trial times a parent's
		// start, never the store's making.
		if _, err := p.preloadedStore(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (p *Platform) prepare(ctx context.Context, s platform.Setup) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	outerSetup := s
	outerSetup.Networks = []vocab.Network{vocab.Bridge}
	outerSetup.Storages = []vocab.Storage{vocab.Layer}
	if err := p.outer.Prepare(ctx, outerSetup); err != nil {
		return err
	}
	p.setup = s
	if p.work == "" {
		work, err := workdir.Make(p.root, s.CampaignID)
		if err != nil {
			return err
		}
		p.work = work
	}
	progress := s.Notes()
	if p.parentImage == "" {
		mods, _ := filepath.Glob(filepath.Join(xtablesDir, "*.so"))
		tag, err := p.outer.Engine().EnsureImage(ctx, image.Input{Binary: p.binary, Tools: engineTools, Files: mods, Repository: ParentRepository}, s.Labels, progress)
		if err != nil {
			return fmt.Errorf("nested: the parent image (the engine from the docker.io package): %w", err)
		}
		p.parentImage = tag
	}
	if p.agentTar == "" {
		tar := filepath.Join(p.work, "agent.tar")
		if err := saveTo(ctx, p.outer, p.outer.AgentImage(), tar); err != nil {
			return err
		}
		p.agentTar = tar
		fmt.Fprintf(progress, "nested: saved the agent image %s for the parents to load\n", p.outer.AgentImage())
	}
	return p.saveUserImages(ctx, progress)
}

// UserImages are the users' images every parent loads, by
// platform.Image.Key (the tags as the machine's engine made them).
func (p *Platform) UserImages() map[string]engine.UserImage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.users)
}

// saveUserImages saves each user's image the machine's engine made
// runnable, once, for every parent to load into its own engine.
func (p *Platform) saveUserImages(ctx context.Context, progress io.Writer) error {
	for key, u := range p.outer.UserImages() {
		if _, done := p.userTars[key]; done {
			continue
		}
		tar := filepath.Join(p.work, "user-"+strings.ReplaceAll(strings.TrimPrefix(u.Tag, image.UserRepository+":"), "/", "_")+".tar")
		if err := saveTo(ctx, p.outer, u.Tag, tar); err != nil {
			return err
		}
		if p.userTars == nil {
			p.userTars, p.users = map[string]string{}, map[string]engine.UserImage{}
		}
		p.userTars[key], p.users[key] = tar, u
		fmt.Fprintf(progress, "nested: saved the user's image %s for the parents to load\n", u.Tag)
	}
	return nil
}

func saveTo(ctx context.Context, d *docker.Platform, tag, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := d.Engine().SaveImage(ctx, tag, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// HostAddr implements platform.Platform: the machine as a child sees it is
// the gateway of the campaign's bridge, which the machine owns: reached
// from a parent on that bridge directly, from a child on the inner bridge
// through its parent, and from a parent on the host network locally.
func (p *Platform) HostAddr(vocab.Network) string { return p.outer.HostAddr(vocab.Bridge) }

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	info := p.outer.Info()
	p.mu.Lock()
	defer p.mu.Unlock()
	info["nested.parent_image"] = p.parentImage
	info["nested.privileges"] = p.outer.EnginePrivileges().String()
	info["nested.inner_subnets"] = fmt.Sprintf("%s, a /%d per parent with a bridge", p.setup.Subnets.Net(subnets.InnerBridges, subnets.InnerBridgesBits), subnets.InnerBridgeBits)
	if p.store != nil && p.store.err == nil && p.store.dir != "" {
		info["nested.preloaded_store"] = p.store.dir
		info["nested.preloaded_seconds"] = strconv.FormatFloat(p.store.seconds, 'f', 2, 64)
	}
	return info
}

// Close removes every parent still there, the campaign's work directory
// and what the machine's engine made.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	parents := make([]*parent, 0, len(p.parents))
	for pr := range p.parents {
		parents = append(parents, pr)
	}
	p.closed = true
	work := p.work
	p.mu.Unlock()
	var errs []error
	for _, pr := range parents {
		errs = append(errs, pr.remove(ctx))
	}
	errs = append(errs, p.outer.Close(ctx))
	if work != "" {
		errs = append(errs, removeWork(work))
	}
	return errors.Join(errs...)
}

// Start implements platform.Platform: the child joins the parent that is
// taking children for its trial and options, or starts a new one.
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	requested := time.Now()
	pr, created, err := p.parentFor(spec)
	if err != nil {
		return nil, err
	}
	if created {
		pr.setUp(ctx, p)
	}
	select {
	case <-pr.ready:
	case <-ctx.Done():
		pr.release(ctx)
		return nil, ctx.Err()
	}
	if pr.err != nil {
		pr.release(ctx)
		return nil, pr.err
	}
	child := spec
	child.Options = nil
	switch spec.Network {
	case vocab.Bridge:
		child.Network = vocab.BridgeDefault // the inner engine's bridge, on the parent's subnet
	case vocab.None:
		child.Network = vocab.Host // the parent's namespace, which the lab wires
	}
	inst, err := pr.inner.Start(ctx, child)
	if err != nil {
		pr.release(ctx)
		return nil, fmt.Errorf("starting child %s in parent %s: %w", spec.Name, pr.name, err)
	}
	c := &instance{Instance: inst, parent: pr, requested: requested, childStart: time.Now()}
	if spec.Network == vocab.Host {
		c.ip = pr.ip
	} else {
		c.ip = inst.IP()
	}
	return c, nil
}

// parentFor finds the parent taking children for spec's trial and
// options, or reserves a new one; created says the caller must set it up.
func (p *Platform) parentFor(spec platform.InstanceSpec) (*parent, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, errors.New("nested platform: Start after Close")
	}
	if p.parentImage == "" {
		return nil, false, errors.New("nested platform: Start before Prepare")
	}
	o := spec.Options
	children, err := strconv.Atoi(o[FChildren])
	if err != nil || children < 1 {
		children = 1
	}
	key := fmt.Sprintf("%s|%s|%v", spec.Labels[platform.LabelTrial], spec.Network, o)
	if pr := p.groups[key]; pr != nil && pr.reserve() {
		return pr, false, nil
	}
	limits, err := parentLimits(o)
	if err != nil {
		return nil, false, err
	}
	pr := &parent{name: spec.Name + "-parent", ready: make(chan struct{}), capacity: children, limits: limits,
		network: vocab.Network(o[FParentNetwork]), preloaded: o[FImage] == ImagePreloaded,
		labels: spec.Labels, subnet: -1, pool: p.setup.Subnets, requested: time.Now()}
	switch {
	case spec.Network == vocab.None, pr.network == vocab.OVS: // the lab wires the parent (Provision.Wire)
		pr.network = vocab.None
	case pr.network == "":
		pr.network = vocab.Bridge
	}
	// An inner bridge, or the bridge an engine on the machine's network
	// must be given, has a subnet of its own.
	if spec.Network == vocab.Bridge || pr.network == vocab.Host {
		if pr.subnet = p.takeSubnet(); pr.subnet < 0 {
			return nil, false, errInnerSubnets
		}
	}
	pr.reserve()
	p.groups[key] = pr
	p.parents[pr] = true
	pr.done = func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.groups[key] == pr {
			delete(p.groups, key)
		}
		delete(p.parents, pr)
		if pr.subnet >= 0 {
			p.subnets[pr.subnet] = false
		}
	}
	return pr, true, nil
}

func parentLimits(o map[string]string) (platform.Limits, error) {
	var l platform.Limits
	if v := o[FParentCPUs]; v != "" && v != noLimit {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return l, fmt.Errorf("%s %q: %w", FParentCPUs, v, err)
		}
		l.CPUs = f
	}
	if v := o[FParentCpuset]; v != "" && v != noLimit {
		l.Cpuset = v
	}
	if v := o[FParentMemory]; v != "" && v != noLimit {
		n, err := vocab.ParseSize(v)
		if err != nil {
			return l, fmt.Errorf("%s %q: %w", FParentMemory, v, err)
		}
		l.MemoryBytes = int64(n)
	}
	return l, nil
}

// storeOnce is the campaign's preloaded image store, made on first use.
type storeOnce struct {
	once    sync.Once
	dir     string
	seconds float64
	err     error
}

// preloadedStore prepares, once, an engine data root holding the agent
// image: a seed parent whose data root is a host directory loads the image
// and stops; every preloaded parent then mounts that directory read-only.
func (p *Platform) preloadedStore(ctx context.Context) (string, error) {
	p.mu.Lock()
	if p.store == nil {
		p.store = &storeOnce{}
	}
	s := p.store
	p.mu.Unlock()
	s.once.Do(func() {
		start := time.Now()
		s.dir, s.err = p.makeStore(ctx)
		s.seconds = time.Since(start).Seconds()
	})
	return s.dir, s.err
}

func (p *Platform) makeStore(ctx context.Context) (string, error) {
	dir := filepath.Join(p.work, "store")
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	seed := &parent{name: "ctrbench-" + p.setup.CampaignID + "-seed", ready: make(chan struct{}), capacity: 1, pool: p.setup.Subnets,
		network: vocab.Bridge, labels: p.setup.Labels, subnet: -1, storeDir: dir, done: func() {}}
	seed.reserve()
	seed.setUp(ctx, p)
	<-seed.ready
	if seed.err != nil {
		_ = seed.remove(ctx)
		return "", fmt.Errorf("preparing the preloaded image store: %w", seed.err)
	}
	// Stop the seed's engine cleanly, so its store is complete on disk.
	if err := seed.outer.Stop(ctx); err != nil {
		_ = seed.remove(ctx)
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := seed.outer.Wait(wctx); err != nil {
		_ = seed.remove(ctx)
		return "", fmt.Errorf("preparing the preloaded image store: the seed engine did not stop: %w", err)
	}
	if err := seed.remove(ctx); err != nil {
		return "", err
	}
	return dir, nil
}

// removeWork removes a campaign's work directory. A preloaded store's
// layers are plain files on the host (the parents' read-only mounts of them
// went with the parents' mount namespaces).
func removeWork(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// errInnerSubnets: every inner bridge slot of the pool is in use.
var errInnerSubnets = fmt.Errorf("nested platform: all %d inner bridge subnets of the subnet pool are in use", subnets.InnerBridgeCount)

// takeSubnet takes the first free inner bridge slot (-1: none); p.mu held.
func (p *Platform) takeSubnet() int {
	for k := range p.subnets {
		if !p.subnets[k] {
			p.subnets[k] = true
			return k
		}
	}
	return -1
}

// subnetOf is parent pr's inner bridge subnet and the bridge's own
// address, from the campaign's pool.
func (pr *parent) subnetOf() (*net.IPNet, string) {
	n := pr.pool.InnerBridge(pr.subnet)
	return &net.IPNet{IP: n.Addr().AsSlice(), Mask: net.CIDRMask(n.Bits(), 32)}, subnets.CIDR(n, 1)
}

// parentConfig is the init configuration of parent pr: its engine's
// bridge and the networks it makes itself take their subnets from the
// campaign's pool.
func parentConfig(pr *parent) nestedparent.Config {
	c := nestedparent.Config{Socket: sockMount + "/docker.sock", DataRoot: dataRoot, Bridge: pr.hostBridge, Pool: pr.pool.Inner().String()}
	if pr.subnet >= 0 && pr.hostBridge == "" {
		_, c.BIP = pr.subnetOf()
	}
	if pr.preloaded {
		c.Preloaded = storeMount
	}
	return c
}

// routeTo makes the parent's inner subnet reachable from the machine (and
// so from containers on the campaign's bridge and other parents): through
// the parent's address on the campaign's bridge.
func routeTo(pr *parent) error {
	via := pr.routeVia()
	if via == "" {
		return nil
	}
	dst, _ := pr.subnetOf()
	return links.RouteVia(dst, net.ParseIP(via))
}

func unroute(pr *parent) error {
	via := pr.routeVia()
	if via == "" {
		return nil
	}
	dst, _ := pr.subnetOf()
	return links.RouteDel(dst, net.ParseIP(via))
}

// routeVia is the parent's address through which the machine reaches its
// inner bridge: on the campaign's bridge, or the one the lab wired it with
// (a parent on Open vSwitch, once wired); "" when there is none.
func (pr *parent) routeVia() string {
	switch {
	case pr.subnet < 0:
		return ""
	case pr.network == vocab.Bridge:
		return pr.ip
	case pr.network == vocab.None:
		return pr.wired
	}
	return ""
}

// Ping implements platform.Pinger: the machine's engine, which runs the
// parents, answers.
func (p *Platform) Ping(ctx context.Context) error { return p.outer.Ping(ctx) }

// EndOneAtATime implements platform.Serial: the parents are containers of
// the machine's engine, and the children's engines run its dockerd.
func (p *Platform) EndOneAtATime() bool { return p.outer.EndOneAtATime() }
