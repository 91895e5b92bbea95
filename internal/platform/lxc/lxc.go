// Package lxc runs agents in LXC system containers (study S3's third
// platform), driven by LXC's own tools: lxc-execute starts a container from
// a configuration file ctrbench writes, with LXC's small init as PID 1 and
// the agent as its child, and passes the agent's standard streams and exit
// code through; lxc-stop ends it.
//
// Why the tools and not LXD's REST API: LXD's Go client module is not
// available to this build (the module proxy refuses it) and go-lxc, liblxc's
// binding, needs cgo, which the static binary cannot have. lxc-execute is the
// documented interface for an application container.
//
// The root file system is the agent image's content (package image: the
// static ctrbench binary and the workload tools with their libraries),
// written once per content hash to a directory on the host, never
// downloaded; each container writes to an overlay layer of its own above
// it, as a Docker container writes to its overlay2 layer. Limits are LXC's
// cgroup keys (cgroup v1 or v2), placed below ctrbench's campaign tree or
// the emulated machine's group. The bridge is LXC's default topology —
// veth pairs into a Linux bridge whose address is the host's — on a bridge
// ctrbench creates and names ctb…, with static addresses; lxc-net (its
// lxcbr0, dnsmasq and NAT rules) is not started.
package lxc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/hostbridge"
	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/tailbuf"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// WorkRoot holds, per campaign, the containers' configurations, layers and
// volumes.
const WorkRoot = "/var/lib/ctrbench/lxc"

// RootfsRoot holds the root file systems, one per agent image content
// hash, shared by campaigns (`ctrbench clean --images` removes them).
const RootfsRoot = "/var/lib/ctrbench/lxc-rootfs"

// Platform runs agents in LXC containers, for one campaign.
type Platform struct {
	binary string

	campaign  string
	work      string
	rootfs    string // the shared root file system
	rootFiles int
	parent    string             // cgroup the containers' groups are made in
	bridge    *hostbridge.Bridge // the campaign's bridge; nil without one
	pool      subnets.Pool       // the campaign's subnet pool
	version   string
	apparmor  string

	// users are the root file systems of users' images, by
	// platform.Image.Key, with the environment their containers get.
	users map[string]userRootfs

	mu        sync.Mutex
	instances map[string]*instance
}

var _ platform.Platform = (*Platform)(nil)

// New returns an LXC platform running binary (the ctrbench executable).
func New(binary string) *Platform {
	return &Platform{binary: binary, instances: map[string]*instance{}}
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "lxc" }

// BridgeName is the campaign's bridge link.
func BridgeName(campaign string) string { return hostbridge.Name("l", campaign) }

// Prepare writes the root file system (once per content) and makes the
// campaign's directory, and its bridge when a cell asks for one.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	if p.work == "" {
		work, err := workdir.Make(WorkRoot, s.CampaignID)
		if err != nil {
			return err
		}
		p.campaign, p.work, p.pool = s.CampaignID, work, s.Subnets
		p.parent = cgroup.CampaignTree(s.CampaignID)
		if s.CgroupParent != "" {
			p.parent = s.CgroupParent
		}
		p.version = lxcVersion()
		p.apparmor = apparmorProfile()
	}
	progress := s.Notes()
	if p.rootfs == "" {
		if err := p.writeRootfs(s.Tools, progress); err != nil {
			return err
		}
	}
	if err := p.userImages(ctx, s.Images, s.Saver(), progress); err != nil {
		return err
	}
	for _, n := range s.Networks {
		if n == vocab.Bridge && p.bridge == nil {
			b, err := hostbridge.Make(BridgeName(p.campaign), p.pool, subnets.LXCBridge)
			if err != nil {
				return fmt.Errorf("lxc bridge: %w", err)
			}
			p.bridge = b
			fmt.Fprintf(progress, "lxc: bridge %s with %s/24\n", b.Name, b.Gateway())
		}
	}
	return nil
}

// writeRootfs writes the agent image's content to RootfsRoot/<hash>,
// unless it is there already.
func (p *Platform) writeRootfs(tools []string, progress io.Writer) error {
	plan, err := image.Plan(image.Input{Binary: p.binary, Tools: tools})
	if err != nil {
		return err
	}
	hash := plan.Tag[strings.LastIndex(plan.Tag, ":")+1:]
	dir := filepath.Join(RootfsRoot, hash)
	p.rootfs, p.rootFiles = dir, len(plan.Files)
	if _, err := os.Stat(filepath.Join(dir, image.BinaryPath)); err == nil {
		fmt.Fprintf(progress, "lxc: root file system %s (cached)\n", dir)
		return nil
	}
	tmp, err := os.MkdirTemp(RootfsRoot+"-tmp", hash+"-")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(RootfsRoot+"-tmp", 0o700); err == nil {
			tmp, err = os.MkdirTemp(RootfsRoot+"-tmp", hash+"-")
		}
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := WriteRootfs(tmp, plan); err != nil {
		return err
	}
	if err := os.MkdirAll(RootfsRoot, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, image.BinaryPath)); serr == nil {
			return nil // another campaign wrote the same content meanwhile
		}
		return fmt.Errorf("root file system %s: %w", dir, err)
	}
	fmt.Fprintf(progress, "lxc: wrote root file system %s (%d files)\n", dir, len(plan.Files))
	return nil
}

// mountPoints are directories LXC mounts on (autodev's /dev, proc, sys)
// or the agent writes to (/tmp): an image's runtime makes them, LXC wants
// them in the root file system.
var mountPoints = map[string]os.FileMode{"/dev": 0o755, "/proc": 0o555, "/sys": 0o555, "/tmp": 0o777 | os.ModeSticky, "/root": 0o700, "/run": 0o755}

// WriteRootfs writes a planned image's files below dir, with the mount
// points a system container needs.
func WriteRootfs(dir string, plan *image.Context) error {
	for _, f := range plan.Files {
		dst := filepath.Join(dir, f.Path)
		if f.Mode.IsDir() {
			if err := os.MkdirAll(dst, f.Mode.Perm()); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, f.Data, f.Mode.Perm()); err != nil {
			return err
		}
	}
	return makeMountPoints(dir)
}

// makeMountPoints makes the directories LXC mounts on below dir.
func makeMountPoints(dir string) error {
	for d, mode := range mountPoints {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, d), mode); err != nil {
			return err
		}
	}
	return nil
}

// HostAddr implements platform.Platform.
func (p *Platform) HostAddr(n vocab.Network) string {
	switch n {
	case vocab.Host, "":
		return "127.0.0.1"
	case vocab.Bridge:
		if p.bridge != nil { // its /24 may be a spare one (hostbridge.Make); set by Prepare, as Info reads it
			return p.bridge.Gateway()
		}
		return p.pool.IP4(subnets.LXCBridge, 1)
	}
	return ""
}

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	info := map[string]string{
		"lxc.version": p.version, "lxc.tool": "lxc-execute", "lxc.apparmor": p.apparmor,
		"lxc.rootfs": p.rootfs, "lxc.rootfs_files": strconv.Itoa(p.rootFiles), "lxc.storage": "overlay",
	}
	if p.bridge != nil {
		info["lxc.bridge"] = p.bridge.Name
		info["lxc.bridge_subnet"] = p.bridge.Subnet()
		info["lxc.bridge_forward_rule"] = strconv.FormatBool(p.bridge.Filtered())
	}
	return info
}

// Close removes the containers still there, the bridge and its rule, and
// the campaign's directory and cgroups.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	var ins []*instance
	for _, in := range p.instances {
		ins = append(ins, in)
	}
	p.mu.Unlock()
	var errs []error
	for _, in := range ins {
		errs = append(errs, in.Remove(ctx))
	}
	if p.bridge != nil {
		errs = append(errs, p.bridge.Remove())
		p.bridge = nil
	}
	if p.work != "" {
		errs = append(errs, os.RemoveAll(p.work))
		cgroup.RemoveTree(cgroup.CampaignTree(p.campaign))
	}
	return errors.Join(errs...)
}

// lxcVersion is LXC's version, as its tools print it.
func lxcVersion() string {
	out, err := exec.Command("lxc-execute", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// apparmorProfile is the profile containers run under: LXC's generated
// default where AppArmor is enabled, unconfined where the kernel has none.
func apparmorProfile() string {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	if err == nil && strings.TrimSpace(string(b)) == "Y" {
		return "generated"
	}
	return "unconfined"
}

// Start implements platform.Platform: it writes the container's
// configuration and starts lxc-execute, and returns once the agent runs.
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	requested := time.Now()
	if p.work == "" || p.rootfs == "" {
		return nil, errors.New("lxc platform: Start before Prepare")
	}
	dir := filepath.Join(p.work, "c", spec.Name)
	c, seen, err := p.baseConfig(spec, dir)
	if err != nil {
		return nil, err
	}
	in := &instance{seen: seen, p: p, name: spec.Name, dir: dir, cgroup: c.Cgroup, monitor: c.Monitor, done: make(chan struct{}), stderr: tailbuf.New(8 << 10),
		Clock: platform.NewClock(requested)}
	fail := func(err error) (platform.Instance, error) {
		p.release(in.addr)
		os.RemoveAll(dir)
		return nil, fmt.Errorf("lxc container %s: %w", spec.Name, err)
	}
	if err := os.MkdirAll(c.Delta, 0o755); err != nil {
		return fail(err)
	}
	if err := p.wire(spec, &c, in); err != nil {
		return fail(err)
	}
	inv := spec.Agent
	if err := storage(spec, &c, &inv, dir); err != nil {
		return fail(err)
	}
	c.Env = append(c.Env, inv.Env()...)
	if spec.Limits.ReadBps > 0 || spec.Limits.WriteBps > 0 {
		_, mm, err := sysinfo.BlockDevice(p.work)
		if err != nil {
			return fail(fmt.Errorf("block I/O limits: %w", err))
		}
		c.Device = mm
	}
	cfgPath := filepath.Join(dir, "config")
	// Only root reads it: it holds the agent's key.
	if err := os.WriteFile(cfgPath, []byte(c.Config()), 0o600); err != nil {
		return fail(err)
	}
	in.Mark(vocab.Create)
	args := append([]string{"-n", spec.Name, "-P", filepath.Join(p.work, "lxcpath"), "-f", cfgPath, "--", image.BinaryPath}, inv.Args()...)
	if err := os.MkdirAll(filepath.Join(p.work, "lxcpath"), 0o755); err != nil {
		return fail(err)
	}
	if err := in.launch(args); err != nil {
		return fail(err)
	}
	p.mu.Lock()
	p.instances[spec.Name] = in
	p.mu.Unlock()
	if err := in.becomeReady(ctx, c.Empty); err != nil {
		_ = in.Remove(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lxc container %s: %w", spec.Name, err)
	}
	in.Mark(vocab.Start)
	return in, nil
}

// baseConfig is the configuration of container spec.Name, kept in dir,
// before its network and storage are chosen: the root file system (the
// agent's or a user's image's, whose identity it also returns, for Seen),
// its own layer, its cgroups and limits.
func (p *Platform) baseConfig(spec platform.InstanceSpec, dir string) (containerConfig, map[string]string, error) {
	rootfs, env := p.rootfs, []string(nil)
	var seen map[string]string
	if spec.Image != nil {
		u, ok := p.users[spec.Image.Key()]
		if !ok {
			return containerConfig{}, nil, fmt.Errorf("lxc container %s: image %s not prepared (Setup.Images lacks it)", spec.Name, spec.Image)
		}
		rootfs, env = u.dir, u.env
		seen = map[string]string{platform.SeenImage: spec.Image.String(), platform.SeenImageID: u.digest}
	}
	c := containerConfig{Name: spec.Name, Rootfs: rootfs, Env: env, Delta: filepath.Join(dir, "delta"),
		Cgroup: p.parent + "/" + spec.Name, Monitor: cgroup.CampaignTree(p.campaign) + "/lxc.monitor/" + spec.Name, V2: cgroup.V2(), Limits: spec.Limits, AppArmor: p.apparmor}
	return c, seen, nil
}

// launch starts lxc-execute with args, and a goroutine that records its
// exit. lxc-execute is the container's monitor: killed with ctrbench, it
// takes the container with it (LXC gives the container's init a
// parent-death signal).
func (in *instance) launch(args []string) error {
	cmd := exec.Command("lxc-execute", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	// An os.Pipe we own (see the native platform): output written before
	// the exit is not lost.
	out, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = w, in.stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		return fmt.Errorf("starting lxc-execute: %w", err)
	}
	in.cmd, in.stdout = cmd, out
	go in.watch()
	return nil
}

// watch waits for lxc-execute to end, records when, and closes done.
func (in *instance) watch() {
	in.err = in.cmd.Wait()
	in.Mark(vocab.Exit)
	close(in.done)
}

// becomeReady waits until the agent runs in the container and, in an empty
// network namespace, brings its loopback up.
func (in *instance) becomeReady(ctx context.Context, empty bool) error {
	if err := in.awaitAgent(ctx); err != nil {
		return err
	}
	if empty && in.pid != 0 {
		// LXC leaves an empty namespace's loopback down (a system
		// container's init would bring it up); Docker's "none" has it up.
		return links.LoopbackUp(in.NetNSPath())
	}
	return nil
}

// wire puts the container on its network: another's namespace, an
// emulated host's, the machine's, the campaign's bridge (an address of it), or an empty one the
// network lab wires.
func (p *Platform) wire(spec platform.InstanceSpec, c *containerConfig, in *instance) error {
	switch {
	case spec.ShareNetworkWith != "":
		p.mu.Lock()
		other := p.instances[spec.ShareNetworkWith]
		p.mu.Unlock()
		if other == nil {
			return fmt.Errorf("no running container %s to share the network of", spec.ShareNetworkWith)
		}
		c.JoinNetNS = other.NetNSPath()
		in.ip = other.ip
	case spec.NetNS != "" && (spec.Network == vocab.Host || spec.Network == ""):
		c.JoinNetNS = spec.NetNS // an emulated host's, by the lab's path
	case spec.Network == vocab.Host || spec.Network == "":
		c.HostNet = true
	case spec.Network == vocab.Bridge:
		if p.bridge == nil {
			return fmt.Errorf("network %s not prepared (Setup.Networks lacks it)", vocab.Bridge)
		}
		n, ip, err := p.bridge.Alloc()
		if err != nil {
			return err
		}
		in.addr, in.ip = n, ip
		c.Bridge, c.Address, c.Broadcast, c.Gateway = p.bridge.Name, ip+"/24", p.bridge.Broadcast(), p.bridge.Gateway()
		c.VethHost = hostbridge.Port(p.bridge.Name, "v", n)
	case spec.Network == vocab.None:
		c.Empty = true // the network lab wires it
	default:
		return fmt.Errorf("network %s is not one LXC offers here", spec.Network)
	}
	return nil
}

// storage gives the container the data directory its storage level asks.
func storage(spec platform.InstanceSpec, c *containerConfig, inv *invocation.Agent, dir string) error {
	switch spec.Storage {
	case "", vocab.Layer:
	case vocab.Tmpfs:
		c.Tmpfs, inv.DataDir = true, dataMount
	case vocab.Volume:
		c.VolumeDir, inv.DataDir = filepath.Join(dir, "volume"), dataMount
		if err := os.MkdirAll(c.VolumeDir, 0o755); err != nil {
			return err
		}
	default:
		return fmt.Errorf("storage %s is not one LXC offers", spec.Storage)
	}
	return nil
}

// release gives a bridge address back.
func (p *Platform) release(n int) {
	if p.bridge != nil {
		p.bridge.Release(n)
	}
}

type instance struct {
	seen    map[string]string // the user's image it runs, for Seen
	p       *Platform
	name    string
	dir     string
	cgroup  string
	monitor string
	addr    int    // bridge address index; 0 without one
	ip      string // "" on the host's network
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  *tailbuf.Buffer
	pid     int // the agent, as the host numbers it
	done    chan struct{}
	err     error
	once    sync.Once

	*platform.Clock
}

// awaitAgent waits until the agent runs in the container's cgroup, and
// records its host pid: signals go to it directly (LXC's init would turn a
// SIGTERM into a kill of everything a second later).
func (in *instance) awaitAgent(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		for _, pid := range cgroup.Procs(in.cgroup) {
			if isAgent(pid) {
				in.pid = pid
				return nil
			}
		}
		select {
		case <-in.done:
			// It ended before it could be seen (a failed start, or an agent
			// quicker than this loop): the exit says which.
			if strings.Contains(in.stderr.String(), "lxc-execute: "+in.name+": ") {
				return fmt.Errorf("lxc-execute failed: %s", strings.TrimSpace(in.stderr.String()))
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("the agent did not start: %w (stderr %q)", ctx.Err(), in.stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// isAgent reports whether pid runs the ctrbench binary of a root file
// system (not LXC's init, not a tool the agent started).
func isAgent(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.HasPrefix(string(b), image.BinaryPath+"\x00agent\x00")
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

func (in *instance) Stdout() io.Reader { return in.stdout }
func (in *instance) IP() string        { return in.ip }

// Wait implements platform.Instance: lxc-execute exits with the agent's
// code; its standard error holds the agent's and LXC's.
func (in *instance) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return platform.Exit{Code: -1, Stderr: in.stderr.String()}, ctx.Err()
	}
	return platform.Exit{Code: exitCode(in.err), Stderr: in.stderr.String()}, nil
}

// signal sends sig to the agent while the container runs.
func (in *instance) signal(sig syscall.Signal) error {
	select {
	case <-in.done:
		return nil
	default:
	}
	if in.pid == 0 {
		return errors.New("the agent's pid is not known")
	}
	if err := syscall.Kill(in.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Stop implements platform.Instance.
func (in *instance) Stop(context.Context) error { return in.signal(syscall.SIGTERM) }

// Go implements platform.Goer.
func (in *instance) Go(context.Context) error {
	if err := in.signal(syscall.SIGUSR1); err != nil {
		return fmt.Errorf("the go signal: %w", err)
	}
	return nil
}

// NetNSPath implements platform.Instance: the container's namespace, by
// its agent.
func (in *instance) NetNSPath() string { return fmt.Sprintf("/proc/%d/ns/net", in.pid) }

// Remove implements platform.Instance: lxc-stop kills the container (LXC
// then removes its cgroups and veth), lxc-execute's group is killed if it
// lingers, and the container's layer, volume and configuration go.
func (in *instance) Remove(ctx context.Context) error {
	in.once.Do(func() {
		select {
		case <-in.done:
		default:
			stop := exec.Command("lxc-stop", "-n", in.name, "-P", filepath.Join(in.p.work, "lxcpath"), "-k")
			_ = runWithin(stop, 10*time.Second)
			select {
			case <-in.done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
				<-in.done
			}
		}
		in.stdout.Close()
		in.p.mu.Lock()
		delete(in.p.instances, in.name)
		in.p.mu.Unlock()
		in.p.release(in.addr)
		os.RemoveAll(in.dir)
		cgroup.RemoveTree(in.cgroup)
		cgroup.RemoveTree(in.monitor)
		in.Mark(vocab.Remove)
	})
	return nil
}

// runWithin runs cmd, killing it after d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return <-done
	}
}

// Seen implements platform.Seer: the user's image an instance runs from.
func (in *instance) Seen() map[string]string { return maps.Clone(in.seen) }
