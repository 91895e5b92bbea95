package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/hostbridge"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// Caps are what a virtual machine can do: a network stack of its own with
// a NIC on the campaign's bridge, or plugged into the lab's Open vSwitch
// bridge or an emulated host's bridge or OVS bridge (no host network to
// share, no namespace to join or wire), its own disk, and a size (cpus,
// memory) with QEMU in a cgroup of its own.
var Caps = platform.Capabilities{
	StartStop: 5 * time.Second, // rough: for the dry run's estimate
	Networks:  []vocab.Network{vocab.Bridge},
	Storages:  []vocab.Storage{vocab.Layer},
	OwnCgroup: true,
	Limits:    true,
	NoLimits: map[string]string{
		vocab.FPids: "a virtual machine has a kernel and process table of its own; ctrbench sizes it by cpus and memory",
	},
	Phases:     []vocab.Phase{vocab.Create, vocab.Start, vocab.Exit, vocab.Remove},
	Tools:      true,
	UserImages: true,
	Net: platform.Net{
		Plugs:    []vocab.Network{vocab.OVS, vocab.Bridge}, // its tap a port of the lab's Open vSwitch bridge, or of an emulated host's bridge or OVS bridge
		OwnNetNS: true,
	},
	Own: platform.Own{
		Factors: []platform.Factor{
			{Name: FEngine, Default: EngineNone, Doc: "what runs the agent in the machine: none (the machine's init starts it, a process in the machine) or docker (a container of a Docker Engine in the machine, on the machine's network, writing to its layer; the engine is the docker.io package's, its image store built once by a seed machine)",
				Check: func(v string) (string, error) {
					if v != EngineNone && v != EngineDocker {
						return "", fmt.Errorf("want %s or %s", EngineNone, EngineDocker)
					}
					return v, nil
				}},
		},
	},
}

func init() {
	platform.Register(platform.Driver{
		Name:    "vm",
		Summary: "QEMU virtual machines, one per instance: the distribution's kernel and an initramfs with the agent as init (KVM where it works, TCG emulation otherwise)",
		Noun:    "virtual machine",
		Rank:    30,
		Caps:    Caps,
		Open: func(_ context.Context, cfg platform.Config) (platform.Platform, error) {
			if err := Available(); err != nil {
				return nil, err
			}
			return New(cfg.Binary), nil
		},
		Clean: clean,
	})
}

// Available says why virtual machines cannot run here, or nil.
func Available() error {
	if _, err := exec.LookPath(qemuBinary); err != nil {
		return fmt.Errorf("QEMU is not installed: `make setup` installs it (Debian package qemu-system-x86)")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		return fmt.Errorf("mkfs.ext4 is missing (Debian package e2fsprogs): a machine's data disk is ext4")
	}
	_, err := FindKernel()
	return err
}

// clean removes what a killed run left: its QEMU processes (which die
// with ctrbench anyway), taps, bridge and forward rule, cgroups and
// directory; `--images` also removes the initramfs files.
func clean(_ context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	out, err := workdir.Clean(WorkRoot, o, "virtual machines", func(work string) error {
		campaign := filepath.Base(work)
		workdir.Kill(qemuBinary, work)
		cgroup.RemoveTreeWhenIdle(cgroup.CampaignTree(campaign), 5*time.Second)
		return errors.Join(hostbridge.Clean(BridgeName(campaign)), os.RemoveAll(work))
	})
	if err == nil && o.Images && o.Campaign == "" {
		var removed []string
		removed, err = workdir.RemoveCaches("vm initramfs files and image stores", ImageRoot)
		out.Removed = append(out.Removed, removed...)
	}
	return out, err
}
