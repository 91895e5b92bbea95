package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// buildLab creates the networks ctrbench wires itself: the emulated hosts
// and the modes the cells use (netlab), the hosts on the namespaces held
// for them, if any.
func (c *running) buildLab(ctx context.Context, held []string) error {
	hosts, modes := c.needs.Hosts, c.needs.Lab
	if hosts < 2 {
		hosts = 0 // the machine itself only: macvlan, OVS
	}
	if hosts > 0 && len(modes) == 0 {
		modes = []vocab.Network{vocab.Host}
	}
	lab, err := netlab.New(ctx, netlab.Config{
		Token:          c.env.Token,
		Pool:           c.pool(),
		Hosts:          hosts,
		Modes:          modes,
		DelayLine:      c.needs.Delays,
		HostNamespaces: held,
		Spawn:          c.spawnWireGuard,
		Progress:       c.cfg.Progress.Notes(),
	})
	if err != nil {
		return fmt.Errorf("building the network lab: %w", err)
	}
	c.env.Lab = lab
	c.undo = append(c.undo, func(context.Context) error {
		// The lab of the moment: mendLab may have built a new one.
		if err := c.env.Lab.Close(); err != nil {
			return fmt.Errorf("removing the network lab: %w", err)
		}
		return nil
	})
	return nil
}

// pool is the campaign's subnet pool: the file's, or the default.
func (c *running) pool() subnets.Pool { return c.cfg.Experiment.SubnetPool.OrDefault() }

// mendLab rebuilds the lab, before a trial, when part of it is gone (a
// namespace deleted from outside): the trial then runs on a whole lab
// rather than failing to enter it.
func (c *running) mendLab(ctx context.Context) error {
	old := c.env.Lab
	if old == nil {
		return nil
	}
	broken := old.Intact()
	if broken == nil {
		return nil
	}
	fmt.Fprintf(c.cfg.Progress.Notes(), "netlab: %v; rebuilding the lab\n", broken)
	if err := old.Close(); err != nil {
		fmt.Fprintf(c.cfg.Progress.Notes(), "netlab: removing what is left of it: %v\n", err)
	}
	cfg := old.Config()
	if cfg.HostNamespaces != nil {
		// Closing the lab ended what held the hosts' namespaces: new ones.
		held, err := c.holdHostNamespaces(ctx)
		if err != nil {
			return fmt.Errorf("rebuilding the network lab (%v): %w", broken, err)
		}
		cfg.HostNamespaces = held
	}
	lab, err := netlab.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("rebuilding the network lab (%v): %w", broken, err)
	}
	c.env.Lab = lab
	return nil
}

// spawnWireGuard runs `ctrbench agent wireguard` inside an emulated host's
// namespace (netlab's Spawner) and returns once it reports ready. The
// process dies with ctrbench (PDEATHSIG); stop ends it with SIGTERM.
func (c *running) spawnWireGuard(ctx context.Context, nsPath string, args []string) (func() error, error) {
	bin, err := c.binary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := netns.Start(nsPath, cmd); err != nil {
		return nil, fmt.Errorf("starting the WireGuard agent: %w", err)
	}
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"event":"ready"`) {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
		done <- cmd.Wait()
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			done <- err
			return nil
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			return errors.New("the WireGuard agent did not stop on SIGTERM; killed")
		}
	}
	select {
	case <-ready:
		return stop, nil
	case err := <-done:
		return nil, fmt.Errorf("the WireGuard agent exited before it was ready (%v): %s", err, strings.TrimSpace(stderr.String()))
	case <-time.After(15 * time.Second):
		_ = stop()
		return nil, fmt.Errorf("the WireGuard agent was not ready within 15 s: %s", strings.TrimSpace(stderr.String()))
	case <-ctx.Done():
		_ = stop()
		return nil, ctx.Err()
	}
}
