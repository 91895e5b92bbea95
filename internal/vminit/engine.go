package vminit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/nestedparent"
)

// Engine is the Docker Engine a machine runs its agent in (platform vm,
// vm.engine docker): the agent is a container of that engine, on the
// machine's own network, its data in the container's writable layer.
//
// A seed machine (Seed) builds the agent image into an engine data root on
// its data disk from the build context its host wrote to a second disk,
// stops the engine and powers off: that disk, kept by the host, is the
// image store every other machine mounts read-only as its second disk and
// starts its engine from (the store's layers bind-mounted read-only, its
// metadata copied — nestedparent.Populate), so no machine copies an image.
type Engine struct {
	Seed   bool   `json:"seed,omitempty"`
	Image  string `json:"image"`  // the agent image's tag
	Device string `json:"device"` // the second disk: the build context (seed) or the store
}

const (
	// StoreDir is the engine data root on a disk: the seed's data disk,
	// every other machine's data disk too (the copy), and the store.
	StoreDir   = "docker"
	storeMount = "/store"
	engineSock = "/run/docker.sock"
	// engineWait bounds the engine's start: under emulation dockerd and
	// its containerd take tens of seconds.
	engineWait = 3 * time.Minute
)

// engineFiles are what dockerd and its containers read from the machine's
// /etc (a container on the host network gets copies of them).
var engineFiles = map[string]string{
	"/etc/hosts":       "127.0.0.1\tlocalhost\n",
	"/etc/resolv.conf": "# no name servers: ctrbench's machines reach addresses only\n",
	"/etc/hostname":    "ctrbench-vm\n",
}

// runEngine starts the engine and runs the agent in it (or, for a seed,
// builds the store); the agent's exit code is the machine's.
func runEngine(cfg Config, port *os.File, stderr io.Writer) (int, error) {
	e := cfg.Engine
	for path, content := range engineFiles {
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return 0, err
		}
	}
	root := filepath.Join(DataMount, StoreDir)
	// The data root is a mount point of its own, as dockerd wants it (it
	// would bind-mount it onto itself, hiding the store's layers mounted
	// below it).
	if err := os.MkdirAll(root, 0o711); err != nil {
		return 0, err
	}
	if err := unix.Mount(root, root, "", unix.MS_BIND, ""); err != nil {
		return 0, fmt.Errorf("the engine's data root: %w", err)
	}
	if !e.Seed {
		if err := waitFor(e.Device, 10*time.Second); err != nil {
			return 0, err
		}
		_ = os.MkdirAll(storeMount, 0o755)
		// noload: a read-only disk's journal is never replayed.
		if err := unix.Mount(e.Device, storeMount, "ext4", unix.MS_RDONLY, "noload"); err != nil {
			return 0, fmt.Errorf("mounting the image store %s: %w", e.Device, err)
		}
		if err := nestedparent.Populate(root, filepath.Join(storeMount, StoreDir)); err != nil {
			return 0, fmt.Errorf("the engine's data root from the store: %w", err)
		}
	}
	ctx := context.Background()
	d, eng, err := startEngine(ctx, root, stderr)
	if err != nil {
		return 0, err
	}
	defer eng.Close()
	if e.Seed {
		return 0, seed(ctx, e, d, eng)
	}
	return runAgent(ctx, cfg, eng, port, stderr)
}

// dockerd is the machine's engine process; exited receives its end.
type dockerd struct {
	cmd    *exec.Cmd
	exited <-chan error
}

// startEngine starts dockerd with root as its data root and waits until
// it answers. DOCKER_RAMDISK: the machine's root is the initramfs, which
// pivot_root cannot leave, so runc moves into a container's root instead.
func startEngine(ctx context.Context, root string, stderr io.Writer) (*dockerd, *engine.Engine, error) {
	c := nestedparent.Config{Socket: engineSock, DataRoot: root}
	if _, err := os.Stat("/usr/sbin/dockerd"); err != nil {
		return nil, nil, errNoEngine
	}
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, nil, err
	}
	d := exec.Command("/usr/sbin/dockerd", c.Args("")...)
	d.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DOCKER_RAMDISK=true"}
	d.Stdout, d.Stderr = stderr, stderr
	if err := d.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting dockerd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	eng, err := engine.New(engine.WithHost("unix://" + engineSock))
	if err != nil {
		_ = d.Process.Kill()
		return nil, nil, err
	}
	start := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = eng.Ping(pctx)
		cancel()
		if err == nil {
			fmt.Fprintf(stderr, "ctrbench vm init: dockerd answers after %.1fs\n", time.Since(start).Seconds())
			return &dockerd{cmd: d, exited: exited}, eng, nil
		}
		select {
		case werr := <-exited:
			eng.Close()
			return nil, nil, fmt.Errorf("dockerd ended before answering: %v", werr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > engineWait {
			_ = d.Process.Kill()
			eng.Close()
			return nil, nil, fmt.Errorf("dockerd did not answer in %s: %v", engineWait, err)
		}
	}
}

// seed builds the agent image from the build context on the second disk,
// stops the engine and unmounts the data disk, so the host can keep it as
// the store.
func seed(ctx context.Context, e *Engine, d *dockerd, eng *engine.Engine) error {
	f, err := os.Open(e.Device)
	if err != nil {
		return err
	}
	err = eng.BuildFrom(ctx, e.Image, f, nil)
	f.Close()
	if err != nil {
		return err
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		return errors.New("dockerd did not stop within a minute of SIGTERM")
	}
	unix.Sync()
	for _, m := range []string{filepath.Join(DataMount, StoreDir), DataMount} {
		if err := unix.Unmount(m, 0); err != nil {
			return fmt.Errorf("unmounting %s on the store's disk: %w", m, err)
		}
	}
	return nil
}

// runAgent runs the agent as a container on the machine's network, its
// standard output to the agent's port, the host's control lines as
// signals to it, and returns its exit code.
func runAgent(ctx context.Context, cfg Config, eng *engine.Engine, port *os.File, stderr io.Writer) (int, error) {
	id, err := eng.CreateContainer(ctx, engine.ContainerSpec{Name: "ctrbench-agent", Image: cfg.Engine.Image,
		Cmd: cfg.Args, Env: cfg.Env, Network: "host", Attach: true})
	if err != nil {
		return 0, fmt.Errorf("creating the agent's container: %w", err)
	}
	att, err := eng.Attach(ctx, id)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = att.Demux(port, stderr)
	}()
	if err := eng.StartContainer(ctx, id); err != nil {
		att.Close()
		return 0, fmt.Errorf("starting the agent's container: %w", err)
	}
	go control(port, func(s syscall.Signal) {
		_ = eng.Signal(ctx, id, signalNames[s])
	})
	code, msg, err := eng.WaitContainer(ctx, id)
	if err != nil {
		att.Close()
		return 0, err
	}
	wg.Wait() // every line of its output is on the port
	if msg != "" {
		fmt.Fprintf(stderr, "ctrbench vm init: the agent's container: %s\n", msg)
	}
	return int(code), nil
}

var signalNames = map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGUSR1: "SIGUSR1", syscall.SIGKILL: "SIGKILL"}

// errNoEngine is returned when a machine is asked for an engine it lacks.
var errNoEngine = errors.New("the machine's initramfs has no Docker Engine (/usr/sbin/dockerd)")
