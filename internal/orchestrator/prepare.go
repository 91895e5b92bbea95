package orchestrator

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// prepare makes what the cells need, in order: the emulated machine's
// cgroup, each platform the cells use — opened from its driver unless
// given — with the networks, storages and tools they ask of it, then the
// network lab (on namespaces a platform holds, when its containers share
// emulated hosts' namespaces). What it made is undone by close, in reverse.
func (c *running) prepare(ctx context.Context) error {
	cfg := c.cfg
	if env := cfg.Experiment.Envelope; !env.IsZero() || cfg.Experiment.VariesMachine() {
		// The emulated machine: one cgroup every instance is placed under
		// (its quota set trial by trial when cells vary it: setMachine).
		c.machine = cgroup.CampaignTree(cfg.CampaignID) + "/machine"
		g, err := cgroup.Create(c.machine, cgroup.Spec{CPUs: env.CPUs, Cpuset: env.Cpuset, MemoryBytes: env.MemoryBytes, Always: true})
		if err != nil {
			return fmt.Errorf("emulated machine: %w", err)
		}
		c.machineGroup = g
		c.undo = append(c.undo, func(context.Context) error {
			_ = g.Remove()
			cgroup.RemoveTree(cgroup.CampaignTree(cfg.CampaignID))
			return nil
		})
	}
	info := map[string]string{result.EnvSubnetPool: c.pool().String()}
	binary, err := c.binary()
	if err != nil {
		return err
	}
	for _, name := range c.needs.PlatformNames() {
		p, ok := cfg.Platforms[name]
		if !ok {
			d, found := platform.Lookup(name)
			if !found {
				return fmt.Errorf("platform %q is not available", name)
			}
			if p, err = d.Open(ctx, platform.Config{Binary: binary, Engine: cfg.Engine}); err != nil {
				return err
			}
		}
		c.env.Platforms[name] = p
		c.undo = append(c.undo, func(ctx context.Context) error {
			if err := p.Close(ctx); err != nil {
				return fmt.Errorf("cleaning up platform %s: %w", name, err)
			}
			return nil
		})
		need := c.needs.Platforms[name]
		s := platform.Setup{
			CampaignID:   cfg.CampaignID,
			Labels:       labels(cfg.CampaignID),
			Networks:     need.Networks,
			Tools:        need.Tools,
			Images:       need.Images,
			Save:         engine.SaveImageTemp,
			Storages:     need.Storages,
			Options:      need.Options,
			Progress:     cfg.Progress.Notes(),
			CgroupParent: c.machine,
			Hosts:        max(1, need.Hosts),
			Spans:        need.Spans,
			Delays:       need.Delays,
			Subnets:      c.pool(),
		}
		if err := c.prepareWatched(ctx, name, p, s); err != nil {
			return err
		}
		for k, v := range p.Info() {
			info[k] = v
		}
	}
	if c.needs.NeedsLab() {
		held, err := c.holdHostNamespaces(ctx)
		if err != nil {
			return err
		}
		if err := c.buildLab(ctx, held); err != nil {
			return err
		}
		for k, v := range c.env.Lab.Info() {
			info["net."+k] = v
		}
	}
	if cfg.Prepared != nil {
		cfg.Prepared(info)
	}
	return nil
}

// holdHostNamespaces has the platform whose containers share emulated
// hosts' namespaces by holding them (Docker) hold one per host, for the
// lab to adopt; nil when no cell asks for it.
func (c *running) holdHostNamespaces(ctx context.Context) ([]string, error) {
	switch len(c.needs.HostNS) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("platforms %s all share emulated hosts' namespaces (network host with hosts) by holding them, and a host has one namespace: use one of them on the hosts' network per campaign", strings.Join(c.needs.HostNS, " and "))
	}
	name := c.needs.HostNS[0]
	d, _ := platform.Lookup(name)
	holder := d.Caps.Net.Holder
	if holder == nil {
		return nil, fmt.Errorf("platform %s cannot hold an emulated host's namespace", name)
	}
	paths := make([]string, c.needs.Hosts)
	for h := range paths {
		p, err := holder.HoldNamespace(ctx, c.env.Platforms[name], h+1)
		if err != nil {
			return nil, err
		}
		paths[h] = p
	}
	fmt.Fprintf(c.cfg.Progress.Notes(), "%s: holding the network namespaces of %d emulated hosts (their containers on network host join them)\n", name, len(paths))
	return paths, nil
}

// binary is the ctrbench executable that runs agents.
func (c *running) binary() (string, error) {
	if c.cfg.Binary != "" {
		return c.cfg.Binary, nil
	}
	return os.Executable()
}

// labels go on every object of the campaign.
func labels(campaignID string) map[string]string {
	return map[string]string{
		platform.LabelManaged:  "true",
		platform.LabelCampaign: campaignID,
		platform.LabelOwnerPID: strconv.Itoa(os.Getpid()),
	}
}

// prepareWatched prepares platform p, watched as a trial is (a frozen
// engine stops the campaign, resumable, instead of holding it for the
// preparation's own bound of minutes).
func (c *running) prepareWatched(ctx context.Context, name string, p platform.Platform, s platform.Setup) error {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var w *watchdog
	if pp, ok := p.(platform.Pinger); ok {
		w = c.watch(cancel, map[string]platform.Pinger{name: pp})
	}
	err := p.Prepare(pctx, s)
	if w != nil {
		if stopped := w.stop(); stopped != nil {
			c.cfg.CleanupTimeout = min(c.cfg.CleanupTimeout, breakerCleanup)
			return stopped
		}
	}
	if err != nil {
		return fmt.Errorf("preparing platform %s: %w", name, err)
	}
	return nil
}
