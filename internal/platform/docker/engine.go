package docker

import (
	"context"
	"maps"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
)

// EnginePrivileges are the privileges a container running an engine gets
// from this platform's engine (engine.Privileges.For its version; before
// Prepare, the machine's bounding set alone says).
func (p *Platform) EnginePrivileges() engine.Privileges {
	p.mu.Lock()
	defer p.mu.Unlock()
	priv := engine.EnginePrivileges()
	if p.camp != nil {
		priv = priv.For(p.camp.daemon.Versions[result.EnvDocker])
	}
	return priv
}

// StartEngine starts a container that hosts an engine (a nested parent, a
// swarm's node), placed, limited and labelled as spec says, with the
// privileges an inner engine needs (EnginePrivileges), its own image and
// command, and mounts.
func (p *Platform) StartEngine(ctx context.Context, spec platform.InstanceSpec, e engine.EngineSpec) (platform.Instance, error) {
	priv := p.EnginePrivileges()
	return p.startWith(ctx, spec, func(c *engine.ContainerSpec) {
		c.Image, c.Cmd = e.Image, e.Cmd
		if e.Hostname != "" {
			c.Hostname = e.Hostname
		}
		c.Binds = append(c.Binds, e.Binds...)
		if c.Tmpfs == nil {
			c.Tmpfs = map[string]string{}
		}
		maps.Copy(c.Tmpfs, e.Tmpfs)
		if len(e.Sysctls) > 0 {
			c.Sysctls = e.Sysctls
		}
		c.Privileges = &priv
	})
}

// Engine is the engine the platform drives: for what else its callers ask
// of it (another image built, the agent image saved or loaded).
func (p *Platform) Engine() *engine.Engine { return p.eng }

// UserImages are the users' images Prepare made runnable, by
// platform.Image.Key.
func (p *Platform) UserImages() map[string]engine.UserImage {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.camp == nil {
		return nil
	}
	return maps.Clone(p.camp.users)
}

// AgentImage is the campaign's agent image tag ("" before Prepare).
func (p *Platform) AgentImage() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.camp == nil {
		return ""
	}
	return p.camp.image.Tag
}

// Disconnect closes the connection to the engine without removing
// anything: for an engine that is about to go as a whole (a nested
// parent's, with its containers inside).
func (p *Platform) Disconnect() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return p.eng.Close()
}

// Daemon is what the engine said of itself at Prepare (zero before).
func (p *Platform) Daemon() engine.Facts {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.camp == nil {
		return engine.Facts{}
	}
	return p.camp.daemon
}
