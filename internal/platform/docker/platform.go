// Package docker is the docker platform: agents in containers of the
// machine's Docker Engine, driven through package engine (the one that
// speaks the Engine API).
//
// Prepare builds (or reuses) a FROM-scratch agent image from the local
// ctrbench binary and creates a per-campaign bridge network; Start runs one
// container per agent. Nothing is ever pulled: the machines ctrbench runs on
// may have no registry. Other drivers run docker-platform instances on
// other engines (New with WithEngine): a nested parent's, podman's.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/userimage"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Timeouts for waits that have no natural end of their own. A caller's
// shorter deadline always wins.
const (
	prepareTimeout = 10 * time.Minute // image build of a large binary included
	startTimeout   = 2 * time.Minute
	drainTimeout   = 5 * time.Second // for output still in flight after exit
)

var errNoPrepare = errors.New("docker platform: Start called before Prepare")

// Option configures New.
type Option func(*options)

type options struct {
	binary string
	image  string // an agent image already in the engine: nothing is built
	users  map[string]engine.UserImage
	engine []engine.Option
	bridge string
	nsPath bool
}

// WithBinary sets the statically linked ctrbench binary put in the image.
// Prepare needs it.
func WithBinary(path string) Option { return func(o *options) { o.binary = path } }

// WithImage says the agent image tag is already in the engine (loaded into
// a nested parent's daemon, or in its preloaded store): Prepare checks it
// is there and builds nothing.
func WithImage(tag string) Option { return func(o *options) { o.image = tag } }

// WithUserImages says users' images are runnable in the engine already
// (brought into podman's storage), by platform.Image.Key: Prepare makes
// none of them.
func WithUserImages(m map[string]engine.UserImage) Option {
	return func(o *options) { o.users = maps.Clone(m) }
}

// WithBridgeOf names the campaign's bridge network for another engine of
// the same campaign (podman's beside Docker's): its link is
// engine.BridgeName(campaign+owner), so the two never share one.
func WithBridgeOf(owner string) Option { return func(o *options) { o.bridge = owner } }

// WithNamespacePaths says the engine joins a network namespace by path
// (podman's network mode ns:<path>), so a container given an emulated
// host's (InstanceSpec.NetNS) joins it there; Docker joins only
// containers' (HoldNamespace).
func WithNamespacePaths() Option { return func(o *options) { o.nsPath = true } }

// WithEngine drives the engine the options name (engine.WithHost: a
// nested parent's, podman's) rather than the one the environment names.
func WithEngine(opts ...engine.Option) Option {
	return func(o *options) { o.engine = append(o.engine, opts...) }
}

// Platform runs agents in Docker containers. One Platform serves one
// campaign. What Prepare makes is held in small parts — the daemon's facts,
// the agent image, the campaign's bridge, its volume — gathered in one
// campaign value that Start reads whole.
type Platform struct {
	eng    *engine.Engine
	binary string
	preset string // WithImage: the agent image is already in the engine
	// presetUsers: WithUserImages, users' images already runnable there.
	presetUsers map[string]engine.UserImage
	bridgeOf    string // WithBridgeOf
	nsPath      bool   // WithNamespacePaths

	mu     sync.Mutex // serialises Prepare and Close; guards the three below
	camp   *prepared  // nil until Prepare
	closed bool
	setup  platform.Setup // the last Prepare's, for the campaign's images in a new image store
	// storeMu serialises switching the engine's image store (ensureStore).
	storeMu sync.Mutex
}

// prepared is what Prepare made for one campaign. Prepare replaces it with
// a fuller copy when called again (more networks); Start reads a snapshot.
type prepared struct {
	id       string
	labels   map[string]string // put on every object of the campaign
	cgParent string            // Setup.CgroupParent as Docker takes it ("/..."), or ""
	daemon   engine.Facts
	image    engine.AgentImage
	bridge   engine.Bridge // the campaign's own bridge, when a cell uses one
	// direct: ctrbench's links may reach the bridge's containers
	// (firewall.AllowDirect), past the engine's drops.
	direct bool
	// gateways are the campaign's bridges in Docker 28's gateway modes
	// (network routed, nat-unprotected), when a cell uses one.
	gateways map[vocab.Network]engine.Bridge
	// defaultGW is the gateway of Docker's default bridge, when used.
	defaultGW string
	volume    string   // the campaign's data volume, when storage volume is used
	runtimes  []string // OCI runtimes checked for the campaign
	// users are the users' images made runnable, by platform.Image.Key.
	users map[string]engine.UserImage
	// held are the containers holding emulated hosts' namespaces
	// (HoldNamespace), by namespace.
	held map[nsID]*instance
}

var _ platform.Platform = (*Platform)(nil)

// New returns a Docker platform. It does not contact the daemon; Prepare
// does.
func New(opts ...Option) (*Platform, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	eng, err := engine.New(o.engine...)
	if err != nil {
		return nil, err
	}
	return &Platform{eng: eng, binary: o.binary, preset: o.image, presetUsers: o.users, bridgeOf: o.bridge, nsPath: o.nsPath}, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "docker" }

// current is the campaign as Prepare left it, or why there is none.
func (p *Platform) current() (prepared, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return prepared{}, errors.New("docker platform: Start after Close")
	case p.camp == nil || p.camp.image.Tag == "":
		return prepared{}, errNoPrepare
	}
	return *p.camp, nil
}

// Prepare builds or reuses the agent image and creates the campaign's
// bridge network and volume when the campaign uses them. Calling it again
// for the same campaign makes only what is new.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	if s.CampaignID == "" {
		return errors.New("docker platform: Prepare needs a campaign ID")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("docker platform: Prepare after Close")
	}
	if p.camp != nil && p.camp.id != s.CampaignID {
		return fmt.Errorf("docker platform: prepared for campaign %q, not %q", p.camp.id, s.CampaignID)
	}
	progress := s.Notes()
	p.setup = s
	ctx, cancel := engine.WithTimeout(ctx, prepareTimeout)
	defer cancel()

	c := prepared{id: s.CampaignID, labels: owner.Labels(s.CampaignID, s.Labels), users: maps.Clone(p.presetUsers)}
	if p.camp != nil {
		c = *p.camp
	}
	// Whatever fails below, what was made so far is kept for Close.
	defer func() { p.camp = &c }()
	if err := p.learnDaemon(ctx, &c, s.CgroupParent); err != nil {
		return err
	}
	if err := p.ensureAgentImage(ctx, &c, s, progress); err != nil {
		return err
	}
	if err := p.checkRuntimes(ctx, &c, s.Options[FactorRuntime]); err != nil {
		return err
	}
	if err := p.userImages(ctx, &c, s.Images, progress); err != nil {
		return err
	}
	if err := p.campaignBridge(ctx, &c, s, progress); err != nil {
		return err
	}
	if err := p.gatewayBridges(ctx, &c, s, progress); err != nil {
		return err
	}
	if slices.Contains(s.Networks, vocab.BridgeDefault) && c.defaultGW == "" {
		gw, err := p.eng.DefaultGateway(ctx)
		if err != nil {
			return err
		}
		c.defaultGW = gw
	}
	return p.campaignVolume(ctx, &c, s, progress)
}

// learnDaemon asks the engine for its facts, once per campaign, and sets
// the campaign's cgroup parent (cgroupParent, "" for none) as Docker takes
// it, refusing a daemon that cannot place containers below one.
func (p *Platform) learnDaemon(ctx context.Context, c *prepared, cgroupParent string) error {
	if c.daemon.Versions == nil {
		d, err := p.eng.Facts(ctx)
		if err != nil {
			return err
		}
		c.daemon = d
	}
	if cgroupParent != "" {
		// With the cgroupfs driver a parent is a path below each
		// hierarchy's root; the systemd driver wants a slice instead.
		if c.daemon.CgroupDriver == "systemd" {
			return errors.New("docker platform: an emulated machine (cgroup parent) needs the daemon's cgroupfs driver, this one uses systemd")
		}
		c.cgParent = "/" + strings.TrimPrefix(cgroupParent, "/")
	}
	return nil
}

// ensureAgentImage sets the campaign's agent image, once: the preset one
// (which must be in the engine already) or one the engine builds or
// reuses, with the campaign's tools.
func (p *Platform) ensureAgentImage(ctx context.Context, c *prepared, s platform.Setup, progress io.Writer) error {
	if c.image.Tag == "" && p.preset != "" {
		id, err := p.eng.ImageID(ctx, p.preset)
		if err != nil {
			return fmt.Errorf("the agent image %s is not in the engine: %w", p.preset, err)
		}
		c.image = engine.AgentImage{Tag: p.preset, ID: id, Reused: true}
	}
	if c.image.Tag == "" {
		img, err := p.eng.EnsureAgentImage(ctx, p.binary, s.Tools, c.labels, progress)
		if err != nil {
			return err
		}
		c.image = img
	}
	return nil
}

// campaignBridge creates the campaign's own bridge, once, when a network
// of s needs it (bridge, or one that publishes ports), and lets ctrbench's
// links reach its containers on an engine that would drop what they send.
func (p *Platform) campaignBridge(ctx context.Context, c *prepared, s platform.Setup, progress io.Writer) error {
	needsBridge := slices.ContainsFunc(s.Networks, func(n vocab.Network) bool { return n == vocab.Bridge || n.Publishes() })
	if !needsBridge || c.bridge.ID != "" {
		return nil
	}
	b, err := p.createBridge(ctx, c, "", s.Subnets, progress)
	if err != nil {
		return err
	}
	c.bridge = b
	if c.daemon.FiltersDirectAccess() && p.eng.LocalPIDs() && firewall.Available() {
		if err := firewall.AllowDirect(b.Link, b.Subnet); err != nil {
			return err
		}
		c.direct = true
		fmt.Fprintf(progress, "docker: the engine drops what reaches its containers from other links; ctrbench's links may reach %s (iptables raw PREROUTING)\n", b.Subnet)
	}
	return nil
}

// campaignVolume creates the campaign's data volume, once, when a storage
// of s is a volume.
func (p *Platform) campaignVolume(ctx context.Context, c *prepared, s platform.Setup, progress io.Writer) error {
	if !slices.Contains(s.Storages, vocab.Volume) || c.volume != "" {
		return nil
	}
	name := engine.NetworkName(s.CampaignID) + "-data"
	if err := p.eng.CreateVolume(ctx, name, c.labels); err != nil {
		return fmt.Errorf("creating volume %s: %w", name, err)
	}
	c.volume = name
	fmt.Fprintf(progress, "docker: created volume %s\n", name)
	return nil
}

// createBridge makes one of the campaign's bridge networks (in gateway
// mode mode, "" for the engine's default, NAT) on the first block of the
// pool's engine networks that no link of the machine has an address in,
// holding the subnet lock while it chooses and creates.
func (p *Platform) createBridge(ctx context.Context, c *prepared, mode vocab.Network, pool subnets.Pool, progress io.Writer) (engine.Bridge, error) {
	unlock, err := links.LockSubnets()
	if err != nil {
		return engine.Bridge{}, err
	}
	defer unlock()
	var candidates []netip.Prefix
	for _, b := range subnets.EngineNetworks() {
		candidates = append(candidates, pool.Block(b))
	}
	taken, err := links.Taken(candidates)
	if err != nil {
		return engine.Bridge{}, err
	}
	free := candidates[:0]
	for i, sub := range candidates {
		if !taken[i] {
			free = append(free, sub)
		}
	}
	spec := engine.BridgeSpec{Campaign: c.id + p.bridgeOf, Labels: c.labels, Subnets: free}
	if gm := mode.GatewayMode(); gm != "" {
		spec.Campaign += "-" + gm
		spec.Options = map[string]string{engine.GatewayModeOption: gm}
	}
	return p.eng.CreateBridge(ctx, spec, progress)
}

// gatewayBridges makes the campaign's bridges in the gateway modes its
// cells ask for (network routed, nat-unprotected), on an engine that has
// them (Docker 28 and later; an older one would ignore the option and
// give a NAT bridge under another name).
func (p *Platform) gatewayBridges(ctx context.Context, c *prepared, s platform.Setup, progress io.Writer) error {
	for _, n := range s.Networks {
		if n.GatewayMode() == "" || c.gateways[n].ID != "" {
			continue
		}
		if err := c.daemon.HasGatewayModes(); err != nil {
			return fmt.Errorf("network %s: %w", n, err)
		}
		b, err := p.createBridge(ctx, c, n, s.Subnets, progress)
		if err != nil {
			return err
		}
		if got := b.Options[engine.GatewayModeOption]; got != n.GatewayMode() {
			_ = p.eng.RemoveBridge(ctx, b)
			return fmt.Errorf("network %s: the engine made %s with gateway mode %q, not %s", n, b.Name, got, n.GatewayMode())
		}
		if c.gateways == nil {
			c.gateways = map[vocab.Network]engine.Bridge{}
		}
		c.gateways[n] = b
	}
	return nil
}

// network is the campaign's engine network an instance on network mode n
// joins: the bridge (bridge, published), or a gateway mode's.
func (c prepared) network(n vocab.Network) engine.Bridge {
	if n.GatewayMode() != "" {
		return c.gateways[n]
	}
	return c.bridge
}

// HostAddr implements platform.Platform: the host as seen from an instance.
// On a bridge that is the bridge's gateway address, which the host owns.
func (p *Platform) HostAddr(netMode vocab.Network) string {
	if netMode == vocab.Host || netMode == "" {
		return "127.0.0.1"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.camp == nil {
		return ""
	}
	switch netMode {
	case vocab.Bridge, vocab.Routed, vocab.NATUnprotected:
		return p.camp.network(netMode).Gateway
	case vocab.BridgeDefault:
		return p.camp.defaultGW
	}
	return ""
}

// MissingTools lists the tools Prepare could not find on the host; the
// image lacks them.
func (p *Platform) MissingTools() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.camp == nil {
		return nil
	}
	return slices.Clone(p.camp.image.Missing)
}

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := map[string]string{}
	if p.camp == nil {
		return info
	}
	c := p.camp
	maps.Copy(info, c.daemon.Versions)
	c.image.Describe(info)
	c.bridge.Describe(info)
	for _, b := range c.gateways {
		b.Describe(info)
	}
	if c.volume != "" {
		info["docker.volume"] = c.volume
	}
	return info
}

// Close removes the campaign's containers that are still there, then its
// network and volume. It runs even when ctx is already cancelled.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	ctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	var errs []error
	if c := p.camp; c != nil {
		errs = append(errs, p.releaseHeld(ctx, c)...)
		ids, err := p.eng.CampaignContainers(ctx, c.id)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing containers of campaign %s: %w", c.id, err))
		}
		failed := p.eng.RemoveContainers(ctx, ids)
		for _, id := range ids {
			if err := failed[id]; err != nil {
				errs = append(errs, err)
			}
		}
		if c.direct {
			if err := firewall.RemoveDirect(c.bridge.Link); err != nil {
				errs = append(errs, err)
			} else {
				c.direct = false
			}
		}
		for n, b := range c.gateways {
			if err := p.eng.RemoveBridge(ctx, b); err != nil {
				errs = append(errs, err)
			} else {
				delete(c.gateways, n)
			}
		}
		if err := p.eng.RemoveBridge(ctx, c.bridge); err != nil {
			errs = append(errs, err)
		} else {
			c.bridge = engine.Bridge{}
		}
		if c.volume != "" {
			if err := p.eng.RemoveVolume(ctx, c.volume, true); err != nil {
				errs = append(errs, fmt.Errorf("removing volume %s: %w", c.volume, err))
			} else {
				c.volume = ""
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.closed = true
	return p.eng.Close()
}

// UserImageSource is where a user's image comes from, as the engine takes
// it: a reference, or an archive with its ID and tags read from it.
func UserImageSource(img platform.Image) (engine.UserImageSource, error) {
	src := engine.UserImageSource{Ref: img.Ref, Archive: img.Archive}
	if img.Archive != "" {
		im, err := userimage.Open(img.Archive)
		if err != nil {
			return src, err
		}
		src.ID, src.Tags = im.Digest(), im.RepoTags()
		im.Close()
	}
	return src, nil
}

// userImages makes each user's image runnable, once per campaign.
func (p *Platform) userImages(ctx context.Context, c *prepared, imgs []platform.Image, progress io.Writer) error {
	for _, img := range imgs {
		if _, done := c.users[img.Key()]; done {
			continue
		}
		src, err := UserImageSource(img)
		if err != nil {
			return err
		}
		u, err := p.eng.EnsureUserImage(ctx, src, p.binary, c.labels, progress)
		if err != nil {
			return err
		}
		if c.users == nil {
			c.users = map[string]engine.UserImage{}
		}
		c.users[img.Key()] = u
	}
	return nil
}

// Ping implements platform.Pinger: the engine answers.
func (p *Platform) Ping(ctx context.Context) error { return p.eng.Ping(ctx) }

// EndOneAtATime implements platform.Serial: the engine's version decides
// (engine.Facts.EndOneAtATime); unknown before Prepare, the safe side.
func (p *Platform) EndOneAtATime() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.camp == nil || p.camp.daemon.Versions == nil || p.camp.daemon.EndOneAtATime()
}
