package engine

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// Leftovers lists, without removing anything, the containers, networks and
// volumes carrying ctrbench's labels (of one campaign, or all when campaign
// is ""). It backs `clean --dry-run` and the tests' nothing-left-behind checks.
func Leftovers(ctx context.Context, campaign string, opts ...Option) (CleanReport, error) {
	var rep CleanReport
	api, owned, err := newClient(applyOptions(opts))
	if err != nil {
		return rep, err
	}
	if owned {
		defer api.Close()
	}
	f := campaignFilter(campaign)
	cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return rep, fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range cs {
		rep.Containers = append(rep.Containers, containerName(c))
	}
	ns, err := api.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return rep, fmt.Errorf("listing networks: %w", err)
	}
	for _, n := range ns {
		rep.Networks = append(rep.Networks, n.Name)
	}
	vs, err := api.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return rep, fmt.Errorf("listing volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		rep.Volumes = append(rep.Volumes, v.Name)
	}
	return rep, nil
}

// Empty reports whether the report names nothing removed or found.
func (r CleanReport) Empty() bool {
	return len(r.Containers)+len(r.Networks)+len(r.Volumes)+len(r.Images) == 0
}

// LiveBridges are the host links of ctrbench's bridge networks that the
// machine's engine still has (a running campaign's, or one clean was told
// to leave): Docker owns them, and `clean` must not pull them from under
// it. The machine's engine is asked even when DOCKER_HOST names another.
func LiveBridges(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	api, err := client.NewClientWithOpts(client.WithHost(client.DefaultDockerHost), client.WithAPIVersionNegotiation())
	if err != nil {
		return out
	}
	defer api.Close()
	ns, err := api.NetworkList(ctx, network.ListOptions{Filters: campaignFilter("")})
	if err != nil {
		return out
	}
	for _, n := range ns {
		if b := n.Options["com.docker.network.bridge.name"]; b != "" {
			out[b] = true
		}
		if c := n.Labels[platform.LabelCampaign]; c != "" {
			out[BridgeName(c)] = true
		}
	}
	return out
}

// Placement is what the engine says a container of ctrbench's may reach
// of the machine: its mounts, its network mode, and whether it is
// privileged. Tests check it against what the campaign asked for.
type Placement struct {
	Name        string
	Privileged  bool
	NetworkMode string
	Mounts      []MountPoint
}

// MountPoint is one mount of a container: a bind's source is a host
// path, a volume's its name.
type MountPoint struct {
	Type, Source, Destination string
}

// Placements inspects every running container of the campaign (every
// campaign when "").
func Placements(ctx context.Context, campaign string, opts ...Option) ([]Placement, error) {
	api, owned, err := newClient(applyOptions(opts))
	if err != nil {
		return nil, err
	}
	if owned {
		defer api.Close()
	}
	cs, err := api.ContainerList(ctx, container.ListOptions{Filters: campaignFilter(campaign)})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var out []Placement
	for _, c := range cs {
		in, err := api.ContainerInspect(ctx, c.ID)
		if err != nil {
			continue // gone since the list
		}
		p := Placement{Name: containerName(c)}
		if in.HostConfig != nil {
			p.Privileged, p.NetworkMode = in.HostConfig.Privileged, string(in.HostConfig.NetworkMode)
		}
		for _, m := range in.Mounts {
			src := m.Source
			if m.Type == "volume" {
				src = m.Name
			}
			p.Mounts = append(p.Mounts, MountPoint{Type: string(m.Type), Source: src, Destination: m.Destination})
		}
		out = append(out, p)
	}
	return out, nil
}
