package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/owner"
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
	c := &cleaner{api: api, f: campaignFilter(campaign), force: force, rep: &rep}
	if err := c.settle(ctx); err != nil {
		return rep, err
	}
	c.networks(ctx)
	c.volumes(ctx)
	if images {
		c.errs = append(c.errs, cleanImages(ctx, api, c.f, force, c.keep, &rep))
	}
	return rep, errors.Join(c.errs...)
}

// cleaner is one Clean: where it removes from, what it matches, what it
// removed and kept so far (rep), and the failures to remove, in order.
type cleaner struct {
	api   API
	f     filters.Args
	force bool
	rep   *CleanReport
	errs  []error
	// seen holds what the report already says (kept objects, containers
	// that failed to go), so settling passes that meet them again do not
	// repeat them.
	seen map[string]bool
}

// once reports whether key is new to this Clean, and marks it seen.
func (c *cleaner) once(key string) bool {
	if c.seen[key] {
		return false
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[key] = true
	return true
}

// keep says whether the object kind name, with labels, is kept because
// the ctrbench that made it still runs (never with force), and records
// it in the report's Skipped when it is.
func (c *cleaner) keep(kind, name string, labels map[string]string) bool {
	if c.force {
		return false
	}
	pid := labels[platform.LabelOwnerPID]
	if !owner.Running(labels) {
		return false
	}
	if c.once("kept " + kind + " " + name) {
		c.rep.Skipped = append(c.rep.Skipped, fmt.Sprintf("%s %s (campaign %s, owner pid %s is running)",
			kind, name, labels[platform.LabelCampaign], pid))
	}
	return true
}

// Settling: a run killed while its engine was creating a container leaves
// one that did not exist yet when Clean first looked (the engine goes on
// with a request whose client died). After a pass that removed
// containers, Clean looks again settleWait later, up to settlePasses more
// times, until a pass finds nothing new.
const (
	settleWait   = time.Second
	settlePasses = 3
)

// settle removes the matching containers in passes (Settling).
func (c *cleaner) settle(ctx context.Context) error {
	for pass := 0; ; pass++ {
		before := len(c.rep.Containers)
		if err := c.containers(ctx); err != nil {
			return err
		}
		if len(c.rep.Containers) == before || pass == settlePasses {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(settleWait):
		}
	}
}

// containers removes the matching containers, but for swarm tasks' (their
// swarm removes them) and kept ones. It fails only when it cannot list
// them; failures to remove one are kept in c.errs.
func (c *cleaner) containers(ctx context.Context) error {
	containers, err := c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: c.f})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	var ids, names []string
	for _, ct := range containers {
		name := containerName(ct)
		if ct.Labels[swarmTaskLabel] != "" {
			continue // a swarm task's: the swarm removes it with its service (package swarm's clean)
		}
		if c.keep("container", name, ct.Labels) {
			continue
		}
		ids, names = append(ids, ct.ID), append(names, name)
	}
	failed := removeContainers(ctx, c.api, ids)
	for i, id := range ids {
		if err := failed[id]; err != nil {
			if c.once("failed container " + id) {
				c.errs = append(c.errs, err)
			}
			continue
		}
		c.rep.Containers = append(c.rep.Containers, names[i])
	}
	return nil
}

// networks removes the matching networks, but for swarm-scoped and kept
// ones; failures, to list or to remove one, are kept in c.errs.
func (c *cleaner) networks(ctx context.Context) {
	networks, err := c.api.NetworkList(ctx, network.ListOptions{Filters: c.f})
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("listing networks: %w", err))
	}
	for _, n := range networks {
		if n.Scope == "swarm" {
			continue // a swarm's network: package swarm's clean removes it once its services are gone
		}
		if c.keep("network", n.Name, n.Labels) {
			continue
		}
		if err := c.api.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			c.errs = append(c.errs, fmt.Errorf("removing network %s: %w", n.Name, err))
			continue
		}
		c.rep.Networks = append(c.rep.Networks, n.Name)
	}
}

// volumes removes the matching volumes but kept ones (with force, those
// in use too); failures, to list or to remove one, are kept in c.errs.
func (c *cleaner) volumes(ctx context.Context) {
	volumes, err := c.api.VolumeList(ctx, volume.ListOptions{Filters: c.f})
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("listing volumes: %w", err))
	}
	for _, v := range volumes.Volumes {
		if c.keep("volume", v.Name, v.Labels) {
			continue
		}
		if err := c.api.VolumeRemove(ctx, v.Name, c.force); err != nil && !cerrdefs.IsNotFound(err) {
			c.errs = append(c.errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
			continue
		}
		c.rep.Volumes = append(c.rep.Volumes, v.Name)
	}
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
