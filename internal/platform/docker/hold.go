package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// RoleHostNamespace labels the container that holds an emulated host's
// network namespace (platform.LabelRole).
const RoleHostNamespace = "host-namespace"

// holder is the driver's platform.Holder: its platform holds them.
type holder struct{}

// HoldNamespace implements platform.Holder by p's HoldNamespace.
func (holder) HoldNamespace(ctx context.Context, p platform.Platform, host int) (string, error) {
	d, ok := p.(*Platform)
	if !ok {
		return "", fmt.Errorf("docker platform: cannot hold a namespace for a %T", p)
	}
	return d.HoldNamespace(ctx, host)
}

// HoldNamespace makes an emulated host's namespace (platform.Holder). Docker joins a
// namespace by container (--network container:<id>), never by path, so the
// namespace an emulated host adopts is a container's: one started with
// --network none from the agent image, running `agent hold` until Close.
// A container of the campaign given the lab's path for it (InstanceSpec.
// NetNS, network host) then joins that container's namespace: the host's.
func (p *Platform) HoldNamespace(ctx context.Context, host int) (string, error) {
	camp, err := p.current()
	if err != nil {
		return "", err
	}
	// One held again (the lab rebuilt): its holder, ended with the old
	// namespace, goes first, and its name with it.
	for k, in := range camp.held {
		if in.host == host {
			if err := in.Remove(context.WithoutCancel(ctx)); err != nil {
				return "", fmt.Errorf("removing emulated host %d's old holder: %w", host, err)
			}
			p.mu.Lock()
			c := *p.camp
			c.held = maps.Clone(c.held)
			delete(c.held, k)
			p.camp = &c
			p.mu.Unlock()
		}
	}
	spec := platform.InstanceSpec{
		Name:    fmt.Sprintf("%s-host%d", engine.NetworkName(camp.id), host),
		Network: vocab.None,
		Labels:  map[string]string{platform.LabelRole: RoleHostNamespace},
	}
	inst, err := p.startWith(ctx, spec, func(c *engine.ContainerSpec) { c.Cmd = []string{"agent", "hold"} })
	if err != nil {
		return "", fmt.Errorf("holding emulated host %d's network namespace: %w", host, err)
	}
	in := inst.(*instance)
	in.host = host
	path := in.NetNSPath()
	var st unix.Stat_t
	if path == "" {
		err = errors.New("its container has no process")
	} else if err = unix.Stat(path, &st); err != nil {
		err = fmt.Errorf("its container's namespace: %w", err)
	}
	if err != nil {
		_ = in.Remove(context.WithoutCancel(ctx))
		return "", fmt.Errorf("holding emulated host %d's network namespace: %w", host, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *p.camp
	c.held = maps.Clone(c.held)
	if c.held == nil {
		c.held = map[nsID]*instance{}
	}
	c.held[nsID{st.Dev, st.Ino}] = in
	p.camp = &c
	return path, nil
}

// nsID names a network namespace: its nsfs file's device and inode.
type nsID struct{ dev, ino uint64 }

// heldAt is the container holding the namespace at path, which may be
// another name of it (the lab's bind mount).
func (c prepared) heldAt(path string) (*instance, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, fmt.Errorf("the emulated host's namespace: %w", err)
	}
	in, ok := c.held[nsID{st.Dev, st.Ino}]
	if !ok {
		return nil, fmt.Errorf("%s is not a namespace the docker platform holds: a Docker container shares an emulated host's namespace only when the campaign's lab adopted one of the platform's (HoldNamespace)", path)
	}
	return in, nil
}

// releaseHeld removes the containers holding namespaces; the lab has
// deleted (or will delete) its names for them.
func (p *Platform) releaseHeld(ctx context.Context, c *prepared) []error {
	var errs []error
	for k, in := range c.held {
		if err := in.Remove(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(c.held, k)
	}
	return errs
}
