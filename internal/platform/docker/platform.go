package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Platform runs agents in Docker containers. One Platform serves one
// campaign. What Prepare makes is held in small parts — the daemon's facts,
// the agent image, the campaign's bridge, its volume — gathered in one
// campaign value that Start reads whole.
type Platform struct {
	api    API
	owned  bool // api was created here and is closed by Close
	binary string
	preset string // WithImage: the agent image is already in the engine
	// hostPIDs: the engine's process IDs are the machine's (it runs here,
	// not inside a nested parent), so an agent can be signalled directly.
	hostPIDs bool

	mu     sync.Mutex // serialises Prepare and Close; guards the two below
	camp   *campaign  // nil until Prepare
	closed bool
	built  bool // EnsureAgentImage built the image
}

// campaign is what Prepare made for one campaign. Prepare replaces it with
// a fuller copy when called again (more networks); Start reads a snapshot.
type campaign struct {
	id       string
	labels   map[string]string // put on every object of the campaign
	cgParent string            // Setup.CgroupParent as Docker takes it ("/..."), or ""
	daemon   daemonFacts
	image    agentImage
	bridge   bridgeNet // the campaign's own bridge, when a cell uses one
	// defaultGW is the gateway of Docker's default bridge, when used.
	defaultGW string
	volume    string   // the campaign's data volume, when storage volume is used
	runtimes  []string // OCI runtimes checked for the campaign
}

var _ platform.Platform = (*Platform)(nil)

// New returns a Docker platform. It does not contact the daemon; Prepare
// does.
func New(opts ...Option) (*Platform, error) {
	o := applyOptions(opts)
	api, owned, err := newClient(o)
	if err != nil {
		return nil, err
	}
	return &Platform{api: api, owned: owned, binary: o.binary, preset: o.image, hostPIDs: (o.host == "" || o.local) && o.api == nil}, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "docker" }

// BridgeName is the host link name of a campaign's bridge network: the
// "ctb" prefix every ctrbench link carries plus 8 hex digits of a hash of
// the campaign ID (11 characters, under the kernel's 15).
func BridgeName(campaign string) string {
	sum := sha256.Sum256([]byte(campaign))
	return platform.LinkPrefix + hex.EncodeToString(sum[:])[:8]
}

// NetworkName is the Docker network of a campaign.
func NetworkName(campaign string) string { return "ctrbench-" + campaign }

// objectLabels merges the caller's labels with the three ctrbench labels,
// which always win.
func objectLabels(campaign string, extra ...map[string]string) map[string]string {
	l := map[string]string{}
	for _, e := range extra {
		maps.Copy(l, e)
	}
	l[platform.LabelManaged] = "true"
	l[platform.LabelCampaign] = campaign
	l[platform.LabelOwnerPID] = strconv.Itoa(os.Getpid())
	return l
}

// campaignFilter selects the objects of one campaign, or of all campaigns
// when campaign is "".
func campaignFilter(campaign string) filters.Args {
	f := filters.NewArgs(filters.Arg("label", platform.LabelManaged+"=true"))
	if campaign != "" {
		f.Add("label", platform.LabelCampaign+"="+campaign)
	}
	return f
}

// current is the campaign as Prepare left it, or why there is none.
func (p *Platform) current() (campaign, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return campaign{}, errors.New("docker platform: Start after Close")
	case p.camp == nil || p.camp.image.tag == "":
		return campaign{}, errNoPrepare
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
	ctx, cancel := withTimeout(ctx, prepareTimeout)
	defer cancel()

	c := campaign{id: s.CampaignID, labels: objectLabels(s.CampaignID, s.Labels)}
	if p.camp != nil {
		c = *p.camp
	}
	// Whatever fails below, what was made so far is kept for Close.
	defer func() { p.camp = &c }()
	if c.daemon.versions == nil {
		d, err := readDaemon(ctx, p.api)
		if err != nil {
			return err
		}
		c.daemon = d
	}
	if s.CgroupParent != "" {
		// With the cgroupfs driver a parent is a path below each
		// hierarchy's root; the systemd driver wants a slice instead.
		if c.daemon.cgroupDriver == "systemd" {
			return errors.New("docker platform: an emulated machine (cgroup parent) needs the daemon's cgroupfs driver, this one uses systemd")
		}
		c.cgParent = "/" + strings.TrimPrefix(s.CgroupParent, "/")
	}
	if c.image.tag == "" && p.preset != "" {
		img, err := p.api.ImageInspect(ctx, p.preset)
		if err != nil {
			return fmt.Errorf("the agent image %s is not in the engine: %w", p.preset, err)
		}
		c.image = agentImage{tag: p.preset, id: img.ID, reused: true}
	}
	if c.image.tag == "" {
		img, err := ensureImage(ctx, p.api, p.binary, s.Tools, c.labels, progress)
		if err != nil {
			return err
		}
		c.image = img
	}
	if err := p.checkRuntimes(ctx, &c, s.Options[FactorRuntime]); err != nil {
		return err
	}
	if slices.Contains(s.Networks, vocab.Bridge) && c.bridge.id == "" {
		b, err := createBridge(ctx, p.api, c.id, c.labels, progress)
		if err != nil {
			return err
		}
		c.bridge = b
	}
	if slices.Contains(s.Networks, vocab.BridgeDefault) && c.defaultGW == "" {
		gw, err := defaultGateway(ctx, p.api)
		if err != nil {
			return err
		}
		c.defaultGW = gw
	}
	if slices.Contains(s.Storages, vocab.Volume) && c.volume == "" {
		name := NetworkName(s.CampaignID) + "-data"
		if _, err := p.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: c.labels}); err != nil {
			return fmt.Errorf("creating volume %s: %w", name, err)
		}
		c.volume = name
		fmt.Fprintf(progress, "docker: created volume %s\n", name)
	}
	return nil
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
	case vocab.Bridge:
		return p.camp.bridge.gateway
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
	return slices.Clone(p.camp.image.missing)
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
	maps.Copy(info, c.daemon.versions)
	c.image.describe(info)
	c.bridge.describe(info)
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
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	var errs []error
	if c := p.camp; c != nil {
		list, err := p.api.ContainerList(ctx, container.ListOptions{All: true, Filters: campaignFilter(c.id)})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing containers of campaign %s: %w", c.id, err))
		}
		ids := make([]string, len(list))
		for i, ct := range list {
			ids[i] = ct.ID
		}
		failed := removeContainers(ctx, p.api, ids)
		for _, id := range ids {
			if err := failed[id]; err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.bridge.remove(ctx, p.api); err != nil {
			errs = append(errs, err)
		} else {
			c.bridge = bridgeNet{}
		}
		if c.volume != "" {
			if err := p.api.VolumeRemove(ctx, c.volume, true); err != nil && !cerrdefs.IsNotFound(err) {
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
	if p.owned {
		return p.api.Close()
	}
	return nil
}

// removeContainer force-removes a container; one that is already gone, or
// being removed by someone else, counts as removed.
func removeContainer(ctx context.Context, api API, id string) error {
	err := api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if err == nil || cerrdefs.IsNotFound(err) || isRemovalInProgress(err) {
		return nil
	}
	return fmt.Errorf("removing container %s: %w", shortID(id), err)
}

// removeContainers force-removes containers and returns the errors of
// those that stay. A container sharing another's network namespace
// depends on it (podman refuses to remove the other first: "has dependent
// containers"), so the ones that failed are tried once more after the
// rest.
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
