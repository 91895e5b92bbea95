package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// swarmTaskLabel marks a container a swarm task made.
const swarmTaskLabel = "com.docker.swarm.task.id"

// CleanReport lists what Clean removed and what it left alone.
type CleanReport struct {
	Containers []string // names of removed containers
	Networks   []string
	Volumes    []string
	Images     []string // tags (or IDs) of removed agent images
	// Skipped describes objects kept because the ctrbench process that
	// made them is still running, e.g. "container ctrbench-x (campaign c,
	// owner pid 123 is running)".
	Skipped []string
}

// Clean removes what ctrbench left behind, typically after a run was
// killed: containers, then networks, then volumes of one campaign, or of
// all campaigns when campaign is "". Objects whose owner process is still a
// running ctrbench are skipped unless force. Agent images are a cache and
// are kept unless images is true. Failures to remove one object do not stop
// the others; they are returned joined.
func Clean(ctx context.Context, campaign string, force, images bool, opts ...Option) (CleanReport, error) {
	var rep CleanReport
	api, owned, err := newClient(applyOptions(opts))
	if err != nil {
		return rep, err
	}
	if owned {
		defer api.Close()
	}
	ctx, cancel := CleanupContext(ctx)
	defer cancel()
	f := campaignFilter(campaign)
	var errs []error
	keep := func(kind, name string, labels map[string]string) bool {
		if force {
			return false
		}
		pid := labels[platform.LabelOwnerPID]
		if !ownerRunning(pid) {
			return false
		}
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s %s (campaign %s, owner pid %s is running)",
			kind, name, labels[platform.LabelCampaign], pid))
		return true
	}

	containers, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return rep, fmt.Errorf("listing containers: %w", err)
	}
	var ids, names []string
	for _, c := range containers {
		name := containerName(c)
		if c.Labels[swarmTaskLabel] != "" {
			continue // a swarm task's: the swarm removes it with its service (package swarm's clean)
		}
		if keep("container", name, c.Labels) {
			continue
		}
		ids, names = append(ids, c.ID), append(names, name)
	}
	failed := removeContainers(ctx, api, ids)
	for i, id := range ids {
		if err := failed[id]; err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Containers = append(rep.Containers, names[i])
	}

	networks, err := api.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing networks: %w", err))
	}
	for _, n := range networks {
		if n.Scope == "swarm" {
			continue // a swarm's network: package swarm's clean removes it once its services are gone
		}
		if keep("network", n.Name, n.Labels) {
			continue
		}
		if err := api.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", n.Name, err))
			continue
		}
		rep.Networks = append(rep.Networks, n.Name)
	}

	volumes, err := api.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing volumes: %w", err))
	}
	for _, v := range volumes.Volumes {
		if keep("volume", v.Name, v.Labels) {
			continue
		}
		if err := api.VolumeRemove(ctx, v.Name, force); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
			continue
		}
		rep.Volumes = append(rep.Volumes, v.Name)
	}

	if images {
		errs = append(errs, cleanImages(ctx, api, f, force, keep, &rep))
	}
	return rep, errors.Join(errs...)
}

// cleanImages removes agent images. An image carries the labels of the
// campaign that built it, even though later campaigns reuse it.
func cleanImages(ctx context.Context, api API, f filters.Args, force bool, keep func(kind, name string, labels map[string]string) bool, rep *CleanReport) error {
	// Top-level images only; removing one prunes its untagged parents.
	list, err := api.ImageList(ctx, image.ListOptions{Filters: f})
	if err != nil {
		return fmt.Errorf("listing images: %w", err)
	}
	var errs []error
	for _, img := range list {
		name := shortID(strings.TrimPrefix(img.ID, "sha256:"))
		if tags := slices.DeleteFunc(slices.Clone(img.RepoTags), func(s string) bool { return s == "<none>:<none>" }); len(tags) > 0 {
			name = strings.Join(tags, ",")
		}
		if keep("image", name, img.Labels) {
			continue
		}
		_, err := api.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: force, PruneChildren: true})
		switch {
		case err == nil || cerrdefs.IsNotFound(err):
			rep.Images = append(rep.Images, name)
		case cerrdefs.IsConflict(err):
			// Still used by a container that was kept.
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("image %s (in use: %v)", name, err))
		default:
			errs = append(errs, fmt.Errorf("removing image %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func containerName(c container.Summary) string {
	if len(c.Names) > 0 {
		return strings.TrimPrefix(c.Names[0], "/")
	}
	return shortID(c.ID)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
