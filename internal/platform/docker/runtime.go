package docker

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// FactorRuntime is the OCI runtime that runs a container (runc, crun…):
// a factor of the engines that let a container choose one.
const FactorRuntime = "runtime"

// DefaultRuntime is the runtime a cell gets when it does not choose one:
// the one every Docker Engine has.
const DefaultRuntime = "runc"

var runtimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// RuntimeFactor is the runtime factor's declaration. Which runtimes exist
// is the engine's to say: Prepare refuses one the daemon lacks, or one
// that cannot start a container on this machine, with the reason.
var RuntimeFactor = platform.Factor{
	Name:    FactorRuntime,
	Default: DefaultRuntime,
	Doc:     "the OCI runtime that runs the container, by the name the engine knows it (docker info: Runtimes), e.g. runc or crun",
	Check: func(level string) (string, error) {
		if !runtimeName.MatchString(level) {
			return "", fmt.Errorf("want a runtime name such as runc or crun (letters, digits, '.', '_' and '-')")
		}
		return level, nil
	},
}

// checkRuntimes refuses runtimes the daemon lacks and, by starting a
// container with each that is not the default, those that cannot run here
// (crun 1.8 on a host with hybrid cgroups).
func (p *Platform) checkRuntimes(ctx context.Context, c *prepared, levels []string) error {
	for _, rt := range levels {
		if slices.Contains(c.runtimes, rt) {
			continue
		}
		if !slices.Contains(c.daemon.Runtimes, rt) {
			return fmt.Errorf("runtime %s: the engine does not know it; it knows %s (a runtime is registered in the daemon's daemon.json, \"runtimes\")",
				rt, strings.Join(c.daemon.Runtimes, ", "))
		}
		if rt != DefaultRuntime {
			if err := p.probeRuntime(ctx, c, rt); err != nil {
				return fmt.Errorf("runtime %s cannot start a container here: %w", rt, err)
			}
		}
		c.runtimes = append(c.runtimes, rt)
	}
	return nil
}

// probeRuntime runs the agent's version command in a container of runtime rt.
func (p *Platform) probeRuntime(ctx context.Context, c *prepared, rt string) error {
	id, err := p.eng.CreateContainer(ctx, engine.ContainerSpec{Name: engine.NetworkName(c.id) + "-probe-" + rt,
		Image: c.image.Tag, Cmd: []string{"version"}, Labels: c.labels, Runtime: rt, Network: "none"})
	if err != nil {
		return err
	}
	defer func() { _ = p.eng.RemoveContainer(context.WithoutCancel(ctx), id) }()
	// An engine may take the field and ignore it (podman's compatible API
	// does): the container must really have the runtime asked for.
	got, err := p.eng.InspectContainer(ctx, id)
	if err != nil {
		return err
	}
	if got.Configured && got.Runtime != rt {
		return fmt.Errorf("the engine created the container with runtime %q instead: it ignores the choice", got.Runtime)
	}
	if err := p.eng.StartContainer(ctx, id); err != nil {
		return firstLine(err)
	}
	code, _, err := p.eng.WaitContainer(ctx, id)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("the probe container exited %d", code)
	}
	return nil
}

// firstLine keeps an engine error to its message's first line.
func firstLine(err error) error {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return fmt.Errorf("%s", msg)
}
