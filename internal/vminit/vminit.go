// Package vminit is the first process of a ctrbench virtual machine: the
// kernel runs the ctrbench binary from the initramfs as init (`ctrbench
// agent vm`), and this package makes the machine ready and runs one agent.
//
// It mounts the kernel's file systems, loads the virtio modules the host
// listed (the distribution's kernel has them as modules), brings up
// loopback and the virtio NIC with the address the host chose, mounts the
// data disk, then runs the agent with its standard output on the second
// serial port (the host reads it; the first is the console, with the
// kernel's messages and the agent's standard error). Lines the host writes
// to that port are signals for the agent: TERM (stop), GO (begin the
// measured run), KILL. When the agent exits, the exit line goes to the
// console and the machine powers off.
//
// The host side (package platform/vm) writes the Config into the kernel's
// command line (Param), the module list into the initramfs (ModuleList).
package vminit

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Param is the kernel command-line parameter carrying the Config.
const Param = "ctrbench.vm"

// ModuleList is the initramfs file listing, one per line in load order,
// the kernel modules to load.
const ModuleList = "/lib/modules/ctrbench.order"

// ExitLine starts the console line that carries the agent's exit code.
const ExitLine = "ctrbench-vm-exit "

// ImageEnvFile, in the initramfs of a user's image, holds the environment
// the agent runs with (a JSON list of KEY=value): the image's own and what
// the platform hands the agent (its WORKDIR and command).
const ImageEnvFile = "/.ctrbench-image-env.json"

// DataMount is where the data disk is mounted.
const DataMount = "/data"

// Control lines the host writes to the agent's port.
const (
	CtlTerm = "TERM"
	CtlGo   = "GO"
	CtlKill = "KILL"
)

// Config is what the host tells the machine.
type Config struct {
	Args    []string `json:"args"`              // the agent's arguments (after the binary)
	Address string   `json:"address,omitempty"` // eth0's address, CIDR
	Gateway string   `json:"gateway,omitempty"`
	Disk    string   `json:"disk,omitempty"` // the data disk's device, e.g. /dev/vda
	// Env is more of the agent's environment: its key
	// (invocation.Agent.Env). The kernel's command line is the one
	// channel into the machine before it runs; init covers /proc/cmdline
	// with a copy that lacks it before any of the workload's processes
	// start.
	Env []string `json:"env,omitempty"`
	// Engine, when set, runs the agent in a Docker Engine in the machine.
	Engine *Engine `json:"engine,omitempty"`
}

// Encode is the Config as Param's value.
func (c Config) Encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a Config from a kernel command line.
func Decode(cmdline string) (Config, error) {
	var c Config
	for _, f := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(f, Param+"="); ok {
			b, err := base64.RawURLEncoding.DecodeString(v)
			if err != nil {
				return c, fmt.Errorf("%s: %w", Param, err)
			}
			return c, json.Unmarshal(b, &c)
		}
	}
	return c, fmt.Errorf("no %s= on the kernel command line", Param)
}

// Run is the machine's init. It returns only on a failure before the
// agent could run; otherwise the machine powers off.
func Run(stderr io.Writer) error {
	code, err := run(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ctrbench vm init: %v\n", err)
		code = 125
	}
	fmt.Fprintf(stderr, "\n%s%d\n", ExitLine, code)
	unix.Sync()
	// Power off; QEMU (-no-reboot) exits.
	return unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}

func run(stderr io.Writer) (int, error) {
	for _, m := range []struct{ src, dst, fstype string }{
		{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/run", "tmpfs"}, {"cgroup2", "/sys/fs/cgroup", "cgroup2"},
	} {
		_ = os.MkdirAll(m.dst, 0o755)
		if err := unix.Mount(m.src, m.dst, m.fstype, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return 0, fmt.Errorf("mounting %s: %w", m.dst, err)
		}
	}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return 0, err
	}
	cfg, err := Decode(string(cmdline))
	if err != nil {
		return 0, err
	}
	if err := hideKey(cfg); err != nil {
		return 0, err
	}
	if err := loadModules(); err != nil {
		return 0, err
	}
	if err := network(cfg); err != nil {
		return 0, err
	}
	if cfg.Disk != "" {
		if err := waitFor(cfg.Disk, 10*time.Second); err != nil {
			return 0, err
		}
		_ = os.MkdirAll(DataMount, 0o755)
		if err := unix.Mount(cfg.Disk, DataMount, "ext4", 0, ""); err != nil {
			return 0, fmt.Errorf("mounting the data disk %s: %w", cfg.Disk, err)
		}
	}
	port, err := os.OpenFile("/dev/ttyS1", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return 0, fmt.Errorf("the agent's port: %w", err)
	}
	if err := raw(port); err != nil {
		return 0, err
	}
	if cfg.Engine != nil {
		return runEngine(cfg, port, stderr)
	}
	cmd := exec.Command("/ctrbench", cfg.Args...)
	cmd.Stdout, cmd.Stderr = port, stderr
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
	if b, err := os.ReadFile(ImageEnvFile); err == nil {
		var env []string
		if err := json.Unmarshal(b, &env); err != nil {
			return 0, fmt.Errorf("%s: %w", ImageEnvFile, err)
		}
		cmd.Env = env
	}
	cmd.Env = append(cmd.Env, cfg.Env...)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go control(port, func(s syscall.Signal) { _ = cmd.Process.Signal(s) })
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	}
	return 0, err
}

// hideKey mounts over /proc/cmdline a copy of it whose Config has no
// Env, so the workload's processes do not read the agent's key there.
func hideKey(cfg Config) error {
	if len(cfg.Env) == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return err
	}
	shown := cfg
	shown.Env = nil
	var fields []string
	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(f, Param+"=") {
			f = Param + "=" + shown.Encode()
		}
		fields = append(fields, f)
	}
	copyPath := "/run/ctrbench-cmdline"
	if err := os.WriteFile(copyPath, []byte(strings.Join(fields, " ")+"\n"), 0o444); err != nil {
		return err
	}
	if err := unix.Mount(copyPath, "/proc/cmdline", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("covering /proc/cmdline: %w", err)
	}
	return nil
}

// control passes the host's control lines to the agent as signals.
func control(port io.Reader, signal func(syscall.Signal)) {
	sc := bufio.NewScanner(port)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case CtlTerm:
			signal(syscall.SIGTERM)
		case CtlGo:
			signal(syscall.SIGUSR1)
		case CtlKill:
			signal(syscall.SIGKILL)
		}
	}
}

// raw turns off the serial line's output processing (no \n to \r\n) and
// echo, so the agent's JSON reaches the host as written.
func raw(f *os.File) error {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return fmt.Errorf("the agent's port: %w", err)
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
}

// loadModules loads ModuleList's modules in order.
func loadModules() error {
	b, err := os.ReadFile(ModuleList)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, m := range strings.Fields(string(b)) {
		f, err := os.Open(m)
		if err != nil {
			return err
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("loading %s: %w", filepath.Base(m), err)
		}
	}
	return nil
}

// network brings loopback up and gives eth0 its address and route.
func network(cfg Config) error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return err
	}
	if cfg.Address == "" {
		return nil
	}
	addr, err := netlink.ParseAddr(cfg.Address)
	if err != nil {
		return err
	}
	var eth netlink.Link
	for end := time.Now().Add(10 * time.Second); ; {
		if eth, err = netlink.LinkByName("eth0"); err == nil {
			break
		}
		if time.Now().After(end) {
			return fmt.Errorf("no eth0: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := netlink.AddrAdd(eth, addr); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(eth); err != nil {
		return err
	}
	if cfg.Gateway != "" {
		gw := net.ParseIP(cfg.Gateway)
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw}); err != nil {
			return fmt.Errorf("default route via %s: %w", cfg.Gateway, err)
		}
	}
	return nil
}

// waitFor waits until a device node exists.
func waitFor(dev string, d time.Duration) error {
	for end := time.Now().Add(d); ; {
		if _, err := os.Stat(dev); err == nil {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("no %s after %s", dev, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ParseExit finds the exit code in the console's output; ok is false when
// the machine ended without one (it crashed, or was killed).
func ParseExit(console string) (int, bool) {
	i := strings.LastIndex(console, ExitLine)
	if i < 0 {
		return 0, false
	}
	rest := console[i+len(ExitLine):]
	if j := strings.IndexAny(rest, "\r\n"); j >= 0 {
		rest = rest[:j]
	}
	code, err := strconv.Atoi(strings.TrimSpace(rest))
	return code, err == nil
}
