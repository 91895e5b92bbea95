package vm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/vminit"
)

// The vm platform's own factor, as experiment files write it.
const (
	// FEngine says what runs the agent in a machine: its init (none), or
	// a Docker Engine in the machine (docker), where S2 and S3 ran their
	// containers and where most containers in the world run.
	FEngine      = "vm.engine"
	EngineNone   = "none"
	EngineDocker = "docker"
)

// engineTools are the programs of a machine's engine (image.EnginePrograms).
// The machine's engine has no bridge and no NAT (the agent's container is
// on the machine's own network), so no iptables.
var engineTools = image.EnginePrograms

// engineModules are the kernel modules an engine needs besides the
// devices': overlay, its storage driver's file system.
var engineModules = []string{"overlay"}

// seedTimeout bounds the seed machine: under emulation it boots, starts
// an engine and builds an image of a hundred megabytes.
const seedTimeout = 10 * time.Minute

// engineImage is what machines with an engine boot and mount.
type engineImage struct {
	initrd  initramfs // the machine: the ctrbench binary as init and the engine
	store   string    // the read-only image store disk (vminit.Engine)
	tag     string    // the agent image's tag in it
	version string    // dockerd --version
}

// prepareEngine builds, once per content, the engine's initramfs and the
// image store: a seed machine builds the agent image (the docker platform's,
// the same build context) in its own engine onto a disk, which is kept in
// ImageRoot, named after the initramfs and the image.
func (p *Platform) prepareEngine(ctx context.Context, tools []string, progress io.Writer) error {
	if p.engine.store != "" {
		return nil
	}
	ir, err := buildInitramfs(p.binary, engineTools, p.kernel, engineModules...)
	if err != nil {
		return fmt.Errorf("vm engine initramfs: %w", err)
	}
	agent, err := image.Plan(image.Input{Binary: p.binary, Tools: tools})
	if err != nil {
		return fmt.Errorf("vm engine: the agent image: %w", err)
	}
	sum := sha256.Sum256([]byte(ir.Hash + "\n" + agent.Tag))
	store := filepath.Join(ImageRoot, hex.EncodeToString(sum[:8])+".store")
	if _, err := os.Stat(store); err != nil {
		start := time.Now()
		if err := p.seed(ctx, ir, agent, store); err != nil {
			return fmt.Errorf("vm engine: the seed machine: %w", err)
		}
		fmt.Fprintf(progress, "vm: image store %s (%s built by the engine in a seed machine) in %.1fs\n", store, agent.Tag, time.Since(start).Seconds())
	}
	version := ""
	if out, err := exec.Command("dockerd", "--version").Output(); err == nil {
		version = strings.TrimSpace(string(out))
	}
	p.engine = engineImage{initrd: ir, store: store, tag: agent.Tag, version: version}
	return nil
}

// seed boots a machine that builds the agent image from its build context
// (its second disk) into an engine data root on its data disk, and powers
// off; the disk becomes the store.
func (p *Platform) seed(ctx context.Context, ir initramfs, agent *image.Context, store string) error {
	dir, err := os.MkdirTemp(p.work, "seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	buildContext := filepath.Join(dir, "context.tar")
	if err := writeFile(buildContext, agent.WriteTar); err != nil {
		return err
	}
	disk := filepath.Join(dir, "store.img")
	if err := makeDisk(disk); err != nil {
		return err
	}
	m := machine{Name: "ctrbench-seed", Accel: p.accel, HostCPUs: runtime.NumCPU(), Kernel: p.kernel.Path,
		Initramfs: ir.Path, Console: filepath.Join(dir, "console.log"), Disk: disk, Drives: []string{buildContext},
		Init: vminit.Config{Disk: "/dev/vda", Engine: &vminit.Engine{Seed: true, Image: agent.Tag, Device: "/dev/vdb"}}}
	args, err := m.Args()
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	cmd := exec.CommandContext(sctx, qemuBinary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var qemuErr strings.Builder
	cmd.Stderr = &qemuErr
	runErr := cmd.Run()
	console, _ := os.ReadFile(m.Console)
	if code, ok := vminit.ParseExit(string(console)); !ok || code != 0 || runErr != nil {
		tail := string(console)
		if len(tail) > 4<<10 {
			tail = tail[len(tail)-4<<10:]
		}
		return fmt.Errorf("it ended (%v, QEMU: %s) with its console ending:\n%s", runErr, strings.TrimSpace(qemuErr.String()), tail)
	}
	return os.Rename(disk, store)
}

// writeFile writes path with write, through a buffer.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = errors.Join(write(w), w.Flush())
	return errors.Join(err, f.Close())
}
