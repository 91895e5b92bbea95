// Package vm runs each agent in a virtual machine of its own with QEMU
// (study S1's hypervisor against containers): the distribution's kernel
// boots an initramfs holding the agent image's content and the virtio
// modules, built locally and content-addressed like the image, with the
// ctrbench binary as init (package vminit). KVM where /dev/kvm really
// works, TCG emulation otherwise — recorded, and TCG results say nothing
// about a hypervisor's cost (emulation is ten or more times slower).
//
// A machine has a virtio NIC on a tap (ctb…) in the campaign's bridge
// (package hostbridge), or a port of the network lab's Open vSwitch
// bridge: a machine has no "host network" to share. Its data
// directory is an ext4 file system on a virtio disk of its own (a sparse
// image file made per machine). `cpus` and `memory` size the machine
// (-smp, rounded up, and -m); QEMU itself runs in a cgroup with the cpus
// quota and cpuset, so a fractional limit binds as it does a container.
package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/hostbridge"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vminit"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// WorkRoot holds, per campaign, the machines' disks and consoles.
const WorkRoot = "/var/lib/ctrbench/vm"

// diskSize is each machine's data disk (sparse: only what is written
// takes room), larger than the biggest file a shipped experiment writes.
const diskSize = 8 << 30

// qemuBinary is the emulator of the machine's own architecture.
var qemuBinary = "qemu-system-x86_64"

// Platform runs agents in virtual machines, for one campaign.
type Platform struct {
	binary string

	campaign string
	work     string
	parent   string // cgroup QEMU processes are placed in
	kernel   Kernel
	initrd   initramfs
	accel    Accel
	bridge   *hostbridge.Bridge
	pool     subnets.Pool // the campaign's subnet pool
	version  string
	users    map[string]userInitrd // users' images' initramfs, by platform.Image.Key
	engine   engineImage           // machines with an engine inside (FEngine)
}

var _ platform.Platform = (*Platform)(nil)

// New returns a vm platform booting binary (the ctrbench executable) as init.
func New(binary string) *Platform { return &Platform{binary: binary} }

// Name implements platform.Platform.
func (p *Platform) Name() string { return "vm" }

// BridgeName is the campaign's bridge link.
func BridgeName(campaign string) string { return hostbridge.Name("v", campaign) }

// Prepare finds the kernel, builds the initramfs (once per content),
// decides the accelerator and makes the campaign's bridge.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	progress := s.Notes()
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
		if p.kernel, err = FindKernel(); err != nil {
			return err
		}
		p.accel = DetectAccel()
		if out, err := exec.Command(qemuBinary, "--version").Output(); err == nil {
			p.version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
		}
		note := ""
		if p.accel.Name == "tcg" {
			note = " — emulated: timings say nothing about a hypervisor's cost (" + p.accel.Reason + ")"
		}
		fmt.Fprintf(progress, "vm: kernel %s, accelerator %s%s\n", p.kernel.Version, p.accel.Name, note)
	}
	if p.initrd.Path == "" {
		start := time.Now()
		ir, err := buildInitramfs(p.binary, s.Tools, p.kernel)
		if err != nil {
			return fmt.Errorf("vm initramfs: %w", err)
		}
		p.initrd = ir
		fmt.Fprintf(progress, "vm: initramfs %s (%d files) in %.1fs\n", ir.Path, ir.Files, time.Since(start).Seconds())
	}
	if err := p.userImages(ctx, s.Images, s.Saver(), progress); err != nil {
		return err
	}
	if slices.Contains(s.Options[FEngine], EngineDocker) {
		if err := p.prepareEngine(ctx, s.Tools, progress); err != nil {
			return err
		}
	}
	if p.bridge == nil {
		b, err := hostbridge.Make(BridgeName(p.campaign), p.pool, subnets.VMBridge)
		if err != nil {
			return fmt.Errorf("vm bridge: %w", err)
		}
		p.bridge = b
		fmt.Fprintf(progress, "vm: bridge %s with %s/24\n", b.Name, b.Gateway())
	}
	return nil
}

// HostAddr implements platform.Platform.
func (p *Platform) HostAddr(n vocab.Network) string {
	if n == vocab.Bridge {
		if p.bridge != nil { // its /24 may be a spare one (hostbridge.Make)
			return p.bridge.Gateway()
		}
		return p.pool.IP4(subnets.VMBridge, 1)
	}
	return ""
}

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	info := map[string]string{"vm.qemu": p.version, "vm.kernel": p.kernel.Version, "vm.accel": p.accel.Name,
		"vm.initramfs": p.initrd.Hash, "vm.nic": "virtio-net-pci on a tap", "vm.disk": "virtio-blk, raw sparse image, ext4, cache=none"}
	if p.accel.Reason != "" {
		info["vm.accel_reason"] = p.accel.Reason
		info["vm."+vocab.InfoNotComparable] = "emulated (TCG: " + p.accel.Reason + "); QEMU interprets every instruction, so these numbers say how slow emulation is, nothing about a hypervisor's cost"
	}
	if p.engine.store != "" {
		info["vm.engine"] = "dockerd of the docker.io package in the machines with " + FEngine + " " + EngineDocker + " (" + p.engine.version + "), its agent image " + p.engine.tag
		info["vm.engine_store"] = p.engine.store
	}
	if p.bridge != nil {
		info["vm.bridge"] = p.bridge.Name
		info["vm.bridge_subnet"] = p.bridge.Subnet()
	}
	return info
}

// Close implements platform.Platform: the machines still running are
// killed, their taps, disks and the bridge removed, the directory too.
func (p *Platform) Close(context.Context) error {
	var errs []error
	if p.work != "" {
		workdir.Kill(qemuBinary, p.work)
	}
	if p.bridge != nil {
		errs = append(errs, p.bridge.Remove()) // with the taps still in it
		p.bridge = nil
	}
	if p.work != "" {
		errs = append(errs, os.RemoveAll(p.work))
		cgroup.RemoveTree(cgroup.CampaignTree(p.campaign))
	}
	return errors.Join(errs...)
}

// Start implements platform.Platform: it makes the machine's disk and
// tap and starts QEMU; the machine boots and runs the agent on its own.
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	requested := time.Now()
	if p.initrd.Path == "" || p.bridge == nil {
		return nil, errors.New("vm platform: Start before Prepare")
	}
	plugged := spec.Plug != nil
	if spec.ShareNetworkWith != "" || spec.Network != vocab.Bridge && (spec.Network != vocab.OVS || !plugged) {
		return nil, fmt.Errorf("vm %s: a virtual machine has a NIC on the campaign's bridge (network %s) or, plugged in by the lab, on Open vSwitch (%s) or an emulated host's bridge, not %q", spec.Name, vocab.Bridge, vocab.OVS, spec.Network)
	}
	if spec.Storage != "" && spec.Storage != vocab.Layer {
		return nil, fmt.Errorf("vm %s: a virtual machine writes to its own disk only (storage %s), not %s", spec.Name, vocab.Layer, spec.Storage)
	}
	what, err := p.bootOf(spec)
	if err != nil {
		return nil, fmt.Errorf("vm %s: %w", spec.Name, err)
	}
	initrd, seen, inv, drives, inside := what.initrd, what.seen, what.inv, what.drives, what.inside
	dir := filepath.Join(p.work, "m", spec.Name)
	in := &instance{p: p, name: spec.Name, dir: dir, done: make(chan struct{}), console: filepath.Join(dir, "console.log"),
		seen: seen, Clock: platform.NewClock(requested)}
	fail := func(err error) (platform.Instance, error) {
		in.release()
		return nil, fmt.Errorf("vm %s: %w", spec.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	nic, err := p.nic(ctx, in, spec)
	if err != nil {
		return fail(err)
	}
	disk := filepath.Join(dir, "disk.img")
	in.disk = disk
	if err := makeDisk(disk); err != nil {
		return fail(err)
	}
	m := machine{Name: "ctrbench-" + spec.Name, Accel: p.accel, CPUs: spec.Limits.CPUs, HostCPUs: runtime.NumCPU(),
		MemoryMB: spec.Limits.MemoryBytes >> 20, Kernel: p.kernel.Path, Initramfs: initrd, Console: in.console,
		Tap: in.tap, TapFD: in.tapFile != nil, MAC: macFor(in.addr), NoOffload: spec.Network == vocab.OVS, Disk: disk, Drives: drives,
		Init: vminit.Config{Args: inv.Args(), Address: nic.address, Gateway: nic.gateway, Disk: "/dev/vda", Env: inv.Env(), Engine: inside}}
	args, err := m.Args()
	if err != nil {
		return fail(err)
	}
	// QEMU in a cgroup of its own: the cpus quota and cpuset bind the
	// whole machine, and it is counted apart from ctrbench.
	g, err := cgroup.Create(p.parent+"/"+spec.Name, cgroup.Spec{CPUs: spec.Limits.CPUs, Cpuset: spec.Limits.Cpuset, Always: true})
	if err != nil {
		return fail(fmt.Errorf("cgroup: %w", err))
	}
	in.group = g
	in.args = args
	in.Mark(vocab.Create)
	b, err := in.boot()
	if err != nil {
		return fail(err)
	}
	in.cur = b
	in.stdout, in.pw = io.Pipe()
	in.Mark(vocab.Start)
	go in.supervise(b)
	return in, nil
}

// nicAddr is a machine's address (with prefix length) and default route.
type nicAddr struct{ address, gateway string }

// nic makes the machine's tap: a port of the campaign's bridge, with an
// address of the bridge's, or a tap the lab plugs in (spec.Plug: on Open
// vSwitch, the machine's or an emulated host's, or on an emulated host's
// bridge, where the tap moves into the host's namespace) with the address
// the lab gives it. A plugged tap is
// opened here, before the lab takes it, and QEMU is given that file
// descriptor. The tap is named and the MAC made after a number of the
// bridge's either way, so both are unique.
func (p *Platform) nic(ctx context.Context, in *instance, spec platform.InstanceSpec) (nicAddr, error) {
	n, ip, err := p.bridge.Alloc()
	if err != nil {
		return nicAddr{}, err
	}
	in.addr, in.ip = n, ip
	if spec.Plug == nil {
		in.tap = hostbridge.Port(p.bridge.Name, "t", n)
		return nicAddr{ip + "/24", p.bridge.Gateway()}, links.AddTap(in.tap, p.bridge.Name)
	}
	in.tap = hostbridge.Port(p.bridge.Name, "o", n)
	if err := links.AddTap(in.tap, ""); err != nil {
		return nicAddr{}, err
	}
	if in.tapFile, err = links.OpenTap(in.tap); err != nil {
		return nicAddr{}, err
	}
	got, err := spec.Plug(ctx, in.tap)
	if err != nil {
		return nicAddr{}, fmt.Errorf("plugging %s into %s: %w", in.tap, spec.Network, err)
	}
	in.ip = got.IP
	return nicAddr{fmt.Sprintf("%s/%d", got.IP, got.Prefix), got.Gateway}, nil
}

// booted is what a machine boots: its initramfs, more disks, the engine
// inside it, the agent's invocation, and what a trial records of them.
type booted struct {
	initrd string
	drives []string
	inside *vminit.Engine
	inv    invocation.Agent
	seen   map[string]string
}

// bootOf is what spec's machine boots: ctrbench's initramfs with the
// agent as init's child, a user's image's, or the engine's initramfs and
// image store (FEngine).
func (p *Platform) bootOf(spec platform.InstanceSpec) (booted, error) {
	b := booted{initrd: p.initrd.Path, inv: spec.Agent}
	b.inv.DataDir = vminit.DataMount
	switch {
	case spec.Options[FEngine] == EngineDocker:
		if spec.Image != nil {
			return b, fmt.Errorf("a user's image in a machine's engine is not built yet: run it with %s %s, or on the docker platform", FEngine, EngineNone)
		}
		if p.engine.store == "" {
			return b, fmt.Errorf("%s %s not prepared (Setup.Options lacks it)", FEngine, EngineDocker)
		}
		b.initrd, b.drives = p.engine.initrd.Path, []string{p.engine.store}
		b.inside = &vminit.Engine{Image: p.engine.tag, Device: "/dev/vdb"}
		// The agent writes in its container's writable layer (overlay2 on
		// the machine's disk), as the docker platform's do in theirs.
		b.inv.DataDir = ""
		b.seen = map[string]string{FEngine: EngineDocker, "vm.engine_image": p.engine.tag}
	case spec.Image != nil:
		u, ok := p.users[spec.Image.Key()]
		if !ok {
			return b, fmt.Errorf("image %s not prepared (Setup.Images lacks it)", spec.Image)
		}
		b.initrd, b.seen = u.Path, map[string]string{platform.SeenImage: spec.Image.String(), platform.SeenImageID: u.digest}
	}
	return b, nil
}

// makeDisk creates a sparse disk image with an ext4 file system.
func makeDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(diskSize); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// lazy_itable_init: the tables are written when first used, so making
	// an 8 GiB file system writes megabytes, not gigabytes.
	out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	return nil
}

// macFor is a locally administered MAC address for machine n.
func macFor(n int) string { return fmt.Sprintf("52:54:00:ce:cb:%02x", n) }

type instance struct {
	p       *Platform
	name    string
	dir     string
	console string
	addr    int
	ip      string
	disk    string // its data disk image
	tap     string
	tapFile *os.File // a plugged tap, open (QEMU's fd 3)
	group   *cgroup.Group
	args    []string       // QEMU's, for a second boot (lockup.go)
	stdout  *io.PipeReader // the agent's output, across boots
	pw      *io.PipeWriter
	qemuErr bytes.Buffer      // QEMU's own messages (safe: read after done)
	seen    map[string]string // the user's image it boots
	done    chan struct{}
	err     error
	lockup  string // the kernel's lockup message that ended it ("" if none)
	once    sync.Once

	mu       sync.Mutex
	cur      boot // the QEMU process running the machine now
	removing bool
	restarts int
	output   atomic.Bool // the agent's output has begun
	*platform.Clock
}

func (in *instance) Stdout() io.Reader { return in.stdout }

// Seen implements platform.Seer: the user's image the machine booted, its
// engine, and a restart after its kernel locked up while booting.
func (in *instance) Seen() map[string]string {
	out := maps.Clone(in.seen)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.restarts > 0 {
		if out == nil {
			out = map[string]string{}
		}
		out[SeenRestarts] = strconv.Itoa(in.restarts)
	}
	return out
}
func (in *instance) IP() string { return in.ip }

// NetNSPath implements platform.Instance: none ctrbench can enter (the
// machine's network is its guest kernel's; the lab plugs its tap instead).
func (in *instance) NetNSPath() string { return "" }

// consoleTail is the end of the machine's console.
func (in *instance) consoleTail() string {
	b, _ := os.ReadFile(in.console)
	const max = 8 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.ToValidUTF8(string(b), "")
}

// Wait implements platform.Instance: the agent's exit code is the one its
// init wrote on the console before the machine powered off.
func (in *instance) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return platform.Exit{Code: -1, Stderr: in.consoleTail()}, ctx.Err()
	}
	console := in.consoleTail()
	if in.lockup != "" {
		return platform.Exit{Code: -1, Stderr: console}, fmt.Errorf("its kernel locked up (%q), and ctrbench stopped it: seen under TCG emulation, a platform's failure, not the workload's", in.lockup)
	}
	if code, ok := vminit.ParseExit(console); ok {
		return platform.Exit{Code: code, Stderr: console}, nil
	}
	msg := strings.TrimSpace(in.qemuErr.String())
	if msg == "" && in.err != nil {
		msg = in.err.Error()
	}
	return platform.Exit{Code: -1, Stderr: console + "\nthe machine ended without its agent's exit code; QEMU: " + msg}, nil
}

// send writes a control line to the agent's port.
func (in *instance) send(line string) error {
	select {
	case <-in.done:
		return nil
	default:
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	_, err := io.WriteString(in.cur.ctl, line+"\n")
	return err
}

// Stop implements platform.Instance.
func (in *instance) Stop(context.Context) error { return in.send(vminit.CtlTerm) }

// Go implements platform.Goer.
func (in *instance) Go(context.Context) error { return in.send(vminit.CtlGo) }

// Remove implements platform.Instance: the machine is killed (it has no
// state worth a shutdown) and its tap, disk and cgroup go.
func (in *instance) Remove(context.Context) error {
	in.once.Do(func() {
		in.mu.Lock()
		in.removing = true
		b := in.cur
		in.mu.Unlock()
		if b.cmd != nil {
			select {
			case <-in.done:
			default:
				b.kill()
				<-in.done
			}
			in.stdout.Close()
		}
		in.release()
		in.Mark(vocab.Remove)
	})
	return nil
}

// release removes what Start made.
func (in *instance) release() {
	if in.tapFile != nil {
		in.tapFile.Close()
	}
	if in.tap != "" {
		_ = links.Remove(in.tap) // one the lab moved into a host is the lab's to remove
	}
	in.p.bridge.Release(in.addr)
	if in.group != nil {
		_ = in.group.Remove()
	}
	os.RemoveAll(in.dir)
}
