package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
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
