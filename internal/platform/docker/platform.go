package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// bridgeNameOption names the Linux bridge Docker creates for a network.
const bridgeNameOption = "com.docker.network.bridge.name"

// Platform runs agents in Docker containers. One Platform serves one
// campaign.
type Platform struct {
	api    API
	owned  bool // api was created here and is closed by Close
	binary string

	mu        sync.Mutex
	campaign  string
	labels    map[string]string // put on every object of the campaign
	versions  map[string]string // daemon facts, gathered by Prepare
	imageTag  string
	imageID   string
	reused    bool // the image existed already
	missing   []string
	netName   string
	netID     string
	subnet    string
	gateway   string
	bridge    string
	volume    string // the campaign's data volume, when storage volume is used
	closed    bool
	prepared  bool
	buildSecs float64
	rootDir   string // the daemon's data root, whose disk blkio limits name
	cgDriver  string
	cgParent  string // Setup.CgroupParent as Docker takes it ("/..."), or ""
	defaultGW string // gateway of Docker's default bridge, when used
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
	return &Platform{api: api, owned: owned, binary: o.binary}, nil
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

// Prepare builds or reuses the agent image and creates the campaign's
// bridge network when the campaign uses one. Calling it again for the same
// campaign does nothing new.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	if s.CampaignID == "" {
		return errors.New("docker platform: Prepare needs a campaign ID")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("docker platform: Prepare after Close")
	}
	if p.campaign != "" && p.campaign != s.CampaignID {
		return fmt.Errorf("docker platform: prepared for campaign %q, not %q", p.campaign, s.CampaignID)
	}
	progress := s.Progress
	if progress == nil {
		progress = io.Discard
	}
	ctx, cancel := withTimeout(ctx, prepareTimeout)
	defer cancel()

	p.campaign = s.CampaignID
	p.labels = objectLabels(s.CampaignID, s.Labels)
	if p.versions == nil {
		v, err := p.daemonFacts(ctx)
		if err != nil {
			return err
		}
		p.versions = v
	}
	if s.CgroupParent != "" {
		// With the cgroupfs driver a parent is a path below each
		// hierarchy's root; the systemd driver wants a slice instead.
		if p.cgDriver == "systemd" {
			return errors.New("docker platform: an emulated machine (cgroup parent) needs the daemon's cgroupfs driver, this one uses systemd")
		}
		p.cgParent = "/" + strings.TrimPrefix(s.CgroupParent, "/")
	}
	if p.imageTag == "" {
		if err := p.ensureImage(ctx, s.Tools, progress); err != nil {
			return err
		}
	}
	if slices.Contains(s.Networks, platform.NetBridge) && p.netID == "" {
		if err := p.createNetwork(ctx, progress); err != nil {
			return err
		}
	}
	if slices.Contains(s.Networks, platform.NetBridgeDefault) && p.defaultGW == "" {
		// Docker's own default bridge (docker0): only its gateway is read.
		n, err := p.api.NetworkInspect(ctx, "bridge", network.InspectOptions{})
		if err != nil {
			return fmt.Errorf("reading Docker's default bridge network: %w", err)
		}
		if len(n.IPAM.Config) > 0 {
			p.defaultGW = n.IPAM.Config[0].Gateway
		}
		if p.defaultGW == "" {
			return errors.New("Docker's default bridge network has no gateway (is the daemon running with --bridge=none?)")
		}
	}
	if slices.Contains(s.Storages, platform.StorageVolume) && p.volume == "" {
		name := NetworkName(s.CampaignID) + "-data"
		if _, err := p.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: p.labels}); err != nil {
			return fmt.Errorf("creating volume %s: %w", name, err)
		}
		p.volume = name
		fmt.Fprintf(progress, "docker: created volume %s\n", name)
	}
	p.prepared = true
	return nil
}

func (p *Platform) daemonFacts(ctx context.Context) (map[string]string, error) {
	v, err := p.api.ServerVersion(ctx)
	if err != nil {
		return nil, unreachable(p.api, err)
	}
	facts := map[string]string{
		"docker.version":            v.Version,
		"docker.api_version":        v.APIVersion,
		"docker.client_api_version": p.api.ClientVersion(),
		"docker.os":                 v.Os,
		"docker.arch":               v.Arch,
		"docker.kernel":             v.KernelVersion,
	}
	for _, c := range v.Components {
		switch c.Name {
		case "containerd":
			facts["containerd.version"] = c.Version
		case "runc":
			facts["runc.version"] = c.Version
		}
	}
	info, err := p.api.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading docker info: %w", err)
	}
	p.rootDir, p.cgDriver = info.DockerRootDir, info.CgroupDriver
	facts["docker.cgroup_driver"] = info.CgroupDriver
	facts["docker.cgroup_version"] = info.CgroupVersion
	facts["docker.storage_driver"] = info.Driver
	facts["docker.default_runtime"] = info.DefaultRuntime
	for k, v := range facts {
		if v == "" {
			delete(facts, k)
		}
	}
	return facts, nil
}

func (p *Platform) createNetwork(ctx context.Context, progress io.Writer) error {
	name := NetworkName(p.campaign)
	bridge := BridgeName(p.campaign)
	// No subnet is chosen here: Docker assigns one from its address pools,
	// which avoids clashing with networks this code cannot see.
	resp, err := p.api.NetworkCreate(ctx, name, network.CreateOptions{
		Driver:  "bridge",
		Labels:  p.labels,
		Options: map[string]string{bridgeNameOption: bridge},
	})
	if err != nil {
		return fmt.Errorf("creating network %s: %w", name, err)
	}
	p.netName, p.netID, p.bridge = name, resp.ID, bridge
	n, err := p.api.NetworkInspect(ctx, resp.ID, network.InspectOptions{})
	if err != nil {
		return fmt.Errorf("inspecting network %s: %w", name, err)
	}
	if len(n.IPAM.Config) > 0 {
		p.subnet = n.IPAM.Config[0].Subnet
		p.gateway = n.IPAM.Config[0].Gateway
	}
	if p.gateway == "" {
		return fmt.Errorf("network %s has no IPv4 gateway", name)
	}
	fmt.Fprintf(progress, "docker: created network %s (subnet %s, gateway %s, bridge %s)\n", name, p.subnet, p.gateway, bridge)
	return nil
}

// HostAddr implements platform.Platform: the host as seen from an instance.
// On the campaign bridge that is the bridge's gateway address, which the
// host owns.
func (p *Platform) HostAddr(netMode string) string {
	switch netMode {
	case platform.NetHost, "":
		return "127.0.0.1"
	case platform.NetBridge:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.gateway
	case platform.NetBridgeDefault:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.defaultGW
	}
	return ""
}

// MissingTools lists the tools Prepare could not find on the host; the
// image lacks them.
func (p *Platform) MissingTools() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.missing)
}

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := maps.Clone(p.versions)
	if info == nil {
		info = map[string]string{}
	}
	set := func(k, v string) {
		if v != "" {
			info[k] = v
		}
	}
	set("docker.image", p.imageTag)
	set("docker.image_id", p.imageID)
	if p.imageTag != "" {
		info["docker.image_reused"] = strconv.FormatBool(p.reused)
		if !p.reused {
			info["docker.image_build_seconds"] = strconv.FormatFloat(p.buildSecs, 'f', 2, 64)
		}
	}
	if len(p.missing) > 0 {
		info["docker.image_missing_tools"] = fmt.Sprint(p.missing)
	}
	set("docker.network", p.netName)
	set("docker.network_subnet", p.subnet)
	set("docker.network_gateway", p.gateway)
	set("docker.network_bridge", p.bridge)
	set("docker.volume", p.volume)
	return info
}

// Close removes the campaign's containers that are still there, then its
// network. It runs even when ctx is already cancelled.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	var errs []error
	if p.campaign != "" {
		list, err := p.api.ContainerList(ctx, container.ListOptions{All: true, Filters: campaignFilter(p.campaign)})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing containers of campaign %s: %w", p.campaign, err))
		}
		for _, c := range list {
			if err := removeContainer(ctx, p.api, c.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.netID != "" {
		if err := p.api.NetworkRemove(ctx, p.netID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", p.netName, err))
		} else {
			p.netID = ""
		}
	}
	if p.volume != "" {
		if err := p.api.VolumeRemove(ctx, p.volume, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", p.volume, err))
		} else {
			p.volume = ""
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

func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && containsFold(err.Error(), "already in progress")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
