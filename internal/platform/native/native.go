// Package native runs agents as host processes: the bare-metal reference.
// Limits are applied with cgroups the platform creates; the agent joins them
// before doing any work. Processes die with ctrbench (PR_SET_PDEATHSIG), so
// a killed run leaves no agent behind; `ctrbench clean` removes the groups.
package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/tailbuf"
	"github.com/ctrbench/ctrbench/internal/userimage"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// Platform runs agents as child processes of ctrbench.
type Platform struct {
	binary   string
	campaign string
	parent   string // cgroup every instance's group is created in
	machine  bool   // parent is an emulated machine (Setup.CgroupParent)
	// images are the users' images unpacked, by platform.Image.Key.
	images map[string]unpacked
	work   string // the campaign's directory below WorkRoot, made by Prepare
}

// WorkRoot holds each campaign's directory of host processes: the users'
// images unpacked and the agents' data directories. It is in the temporary
// directory's file system, where host processes' data has always been
// (a disk workload measures it), and owned as a campaign is, so that
// `ctrbench clean` removes what a killed run left.
var WorkRoot = filepath.Join(os.TempDir(), "ctrbench-native")

// workDir is the campaign's directory (Prepare makes it).
func (p *Platform) workDir() (string, error) {
	if p.work == "" {
		return "", errors.New("native platform: Start before Prepare")
	}
	return p.work, nil
}

// unpacked is a user's image unpacked for host processes.
type unpacked struct {
	dir    string // in the campaign's directory, removed with it at Close; the root filesystem is dir/rootfs
	config userimage.Config
	digest string
}

func (u unpacked) root() string { return filepath.Join(u.dir, "rootfs") }

// New returns a native platform running binary (the ctrbench executable).
func New(binary string) *Platform { return &Platform{binary: binary} }

// Caps are what host processes can do: they live in the machine's
// namespaces (or an emulated host's network namespace), write to its
// filesystem, and get cgroups only for limits.
var Caps = platform.Capabilities{
	StartStop: 100 * time.Millisecond, // rough: for the dry run's estimate
	Networks:  []vocab.Network{vocab.Host},
	Storages:  []vocab.Storage{vocab.Layer},
	Limits:    true,
	Phases:    []vocab.Phase{vocab.Start, vocab.Exit, vocab.Remove},
	// An image archive is unpacked and its commands run chrooted in it:
	// the same binaries and libraries as in the image's containers.
	UserImages: true,
}

func init() {
	platform.Register(platform.Driver{
		Name:    "native",
		Summary: "host processes: the bare-metal reference",
		Noun:    "host process",
		Rank:    0,
		Caps:    Caps,
		Open: func(_ context.Context, cfg platform.Config) (platform.Platform, error) {
			return New(cfg.Binary), nil
		},
		Clean: clean,
	})
}

func (p *Platform) Name() string { return "native" }

func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	p.campaign = s.CampaignID
	p.parent = cgroup.CampaignTree(p.campaign)
	if s.CgroupParent != "" {
		p.parent, p.machine = s.CgroupParent, true
	}
	for _, n := range s.Networks {
		if !slices.Contains(Caps.Networks, n) {
			return fmt.Errorf("native platform supports network host only, not %q", n)
		}
	}
	for _, st := range s.Storages {
		if !slices.Contains(Caps.Storages, st) {
			return fmt.Errorf("native platform writes to the host's filesystem only (storage %q), not %q", vocab.Layer, st)
		}
	}
	if _, err := os.Stat(p.binary); err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	if p.work == "" {
		w, err := workdir.Make(WorkRoot, p.campaign)
		if err != nil {
			return err
		}
		p.work = w
	}
	return p.unpack(ctx, s.Images, s.Saver(), s.Notes())
}

// unpack makes each user's image a root filesystem for host processes.
func (p *Platform) unpack(ctx context.Context, imgs []platform.Image, save platform.SaveImage, notes io.Writer) error {
	for _, img := range imgs {
		if _, done := p.images[img.Key()]; done {
			continue
		}
		im, err := userimage.OpenSource(ctx, img.Ref, img.Archive, save)
		if err != nil {
			return fmt.Errorf("native platform: %w", err)
		}
		work, err := p.workDir()
		if err != nil {
			im.Close()
			return err
		}
		dir, err := os.MkdirTemp(work, "image-")
		if err != nil {
			im.Close()
			return err
		}
		if p.images == nil {
			p.images = map[string]unpacked{}
		}
		u := unpacked{dir: dir, config: im.Config(), digest: im.Digest()}
		p.images[img.Key()] = u // removed at Close, whatever happens next
		sum, err := im.Unpack(u.root())
		im.Close()
		if err != nil {
			return fmt.Errorf("unpacking %s: %w", img, err)
		}
		fmt.Fprintf(notes, "native: unpacked %s (%d files, %.1f MiB) for host processes\n", img, sum.Files, float64(sum.Bytes)/(1<<20))
	}
	return nil
}

func (p *Platform) HostAddr(vocab.Network) string { return "127.0.0.1" }

func (p *Platform) Info() map[string]string {
	return map[string]string{"native.binary": p.binary}
}

// Close removes the campaign's cgroup tree (instances remove their own groups).
func (p *Platform) Close(context.Context) error {
	if p.campaign != "" {
		cgroup.RemoveTree(cgroup.CampaignTree(p.campaign))
	}
	// The users' images were unpacked into the campaign's directory: it
	// goes whole, as clean removes a killed run's.
	p.images = nil
	if p.work == "" {
		return nil
	}
	err := userimage.RemoveUnpacked(p.work)
	p.work = ""
	return err
}

// clean removes the campaign directories of killed runs (all of them with
// o.Force): users' images they unpacked, agents' data.
func clean(_ context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	return workdir.Clean(WorkRoot, o, "directory", userimage.RemoveUnpacked)
}

type instance struct {
	*platform.Clock
	seen    map[string]string // the user's image it runs, for Seen
	netns   string
	dataDir string // removed with the instance
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  *tailbuf.Buffer
	group   *cgroup.Group
	done    chan struct{}
	err     error
	once    sync.Once
}

// Start implements platform.Platform: it checks that the instance asks for
// what host processes can give, puts it in a cgroup with its limits, gives
// it a data directory, and starts the agent as a child process.
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	requested := time.Now()
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	inv := spec.Agent
	group, err := p.limitGroup(spec)
	if err != nil {
		return nil, err
	}
	if group != nil {
		// The agent enters its group itself, before any work, so no
		// measured instruction runs outside the limits.
		inv.JoinCgroups = group.Dirs
	}
	// undo releases what Start made so far when a later step fails.
	var dataDir string
	undo := func() {
		if dataDir != "" {
			os.RemoveAll(dataDir)
		}
		if group != nil {
			group.Remove()
		}
	}
	if dataDir, err = p.dataDir(spec.Name); err != nil {
		undo()
		return nil, err
	}
	inv.DataDir = dataDir
	env, root, err := p.imageEnv(spec)
	if err != nil {
		undo()
		return nil, err
	}
	inv.Root = root
	seen := p.seen(spec)
	cmd := exec.Command(p.binary, inv.Args()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Env = append(append(env, "CTRBENCH_INSTANCE="+spec.Name), inv.Env()...)
	// An os.Pipe we own, not cmd.StdoutPipe: Wait would close that one as
	// soon as the process exits, losing output not yet read.
	out, w, err := os.Pipe()
	if err != nil {
		undo()
		return nil, err
	}
	cmd.Stdout = w
	tail := tailbuf.New(8 << 10)
	cmd.Stderr = tail
	err = startIn(spec.NetNS, cmd)
	w.Close()
	if err != nil {
		out.Close()
		undo()
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	in := &instance{Clock: platform.NewClock(requested), seen: seen, netns: spec.NetNS, dataDir: dataDir, cmd: cmd, stdout: out, stderr: tail, group: group, done: make(chan struct{})}
	in.Mark(vocab.Start)
	go in.watch()
	return in, nil
}

// checkSpec refuses what a host process cannot have: a network other than
// the host's, another instance's namespace, a storage other than the
// host's file system.
func checkSpec(spec platform.InstanceSpec) error {
	if spec.Network != "" && spec.Network != vocab.Host {
		return fmt.Errorf("native platform supports network host only, not %q", spec.Network)
	}
	if spec.ShareNetworkWith != "" {
		return fmt.Errorf("native platform runs in the host's namespace (or an emulated host's), it cannot join %s's", spec.ShareNetworkWith)
	}
	if spec.Storage != "" && spec.Storage != vocab.Layer {
		return fmt.Errorf("native platform supports storage %q only, not %q", vocab.Layer, spec.Storage)
	}
	return nil
}

// limitGroup creates the instance's cgroup with its limits, or returns nil
// when it has no limits and no emulated machine to stay within.
func (p *Platform) limitGroup(spec platform.InstanceSpec) (*cgroup.Group, error) {
	// Under an emulated machine (a cgroup parent with limits) every agent
	// gets a group, so the machine's limits bind it too.
	if spec.Limits.IsZero() && !p.machine {
		return nil, nil
	}
	sp := cgroup.Spec{CPUs: spec.Limits.CPUs, Cpuset: spec.Limits.Cpuset, MemoryBytes: spec.Limits.MemoryBytes,
		BlkioWeight: spec.Limits.BlkioWeight, ReadBps: spec.Limits.ReadBps, WriteBps: spec.Limits.WriteBps, Pids: spec.Limits.Pids, Always: true}
	if sp.ReadBps > 0 || sp.WriteBps > 0 {
		_, mm, err := sysinfo.BlockDevice(os.TempDir())
		if err != nil {
			return nil, fmt.Errorf("block I/O limits for %s: %w", spec.Name, err)
		}
		sp.Device = mm
	}
	group, err := cgroup.Create(p.parent+"/"+spec.Name, sp)
	if err != nil {
		return nil, fmt.Errorf("applying limits to %s: %w", spec.Name, err)
	}
	return group, nil
}

// dataDir makes the directory of instance name's agent data. It lives in a
// directory the platform owns and removes with the instance: an agent
// killed mid-trial cannot clean up itself.
func (p *Platform) dataDir(name string) (string, error) {
	work, err := p.workDir()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(work, "agent-")
	if err != nil {
		return "", fmt.Errorf("making a data directory for %s: %w", name, err)
	}
	return dir, nil
}

// seen is what the instance runs, for Seen: the user's image and its
// digest, or nothing for the agent alone.
func (p *Platform) seen(spec platform.InstanceSpec) map[string]string {
	if spec.Image == nil {
		return nil
	}
	return map[string]string{platform.SeenImage: spec.Image.String(), platform.SeenImageID: p.images[spec.Image.Key()].digest}
}

// startIn starts cmd in the network namespace at netnsPath (an emulated
// host's: the agent and every thread it starts live there), or in
// ctrbench's own when netnsPath is "".
func startIn(netnsPath string, cmd *exec.Cmd) error {
	if netnsPath != "" {
		return netns.Start(netnsPath, cmd)
	}
	return cmd.Start()
}

// watch waits for the agent's process to end, records when it did and
// how, and closes done.
func (in *instance) watch() {
	in.err = in.cmd.Wait()
	in.Mark(vocab.Exit)
	close(in.done)
}

func (in *instance) Stdout() io.Reader { return in.stdout }
func (in *instance) IP() string        { return "" }

func (in *instance) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return platform.Exit{Code: -1, Stderr: in.stderr.String()}, ctx.Err()
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(in.err, &ee) {
		code = ee.ExitCode()
	} else if in.err != nil {
		code = -1
	}
	return platform.Exit{Code: code, Stderr: in.stderr.String()}, nil
}

func (in *instance) Stop(context.Context) error {
	select {
	case <-in.done:
		return nil
	default:
	}
	// Only the agent: it ends the tools it started itself.
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Go implements platform.Goer.
func (in *instance) Go(context.Context) error {
	if err := in.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return fmt.Errorf("the go signal: %w", err)
	}
	return nil
}

func (in *instance) Remove(ctx context.Context) error {
	in.once.Do(func() {
		// Kill the whole process group: tools the agent started go too.
		_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
		}
		in.stdout.Close()
		os.RemoveAll(in.dataDir)
		if in.group != nil {
			// Whatever the workload left in its cgroup (a daemon in a
			// session of its own, a fork loop's children) goes too.
			in.group.Kill()
			in.group.Remove()
		}
		in.Mark(vocab.Remove)
	})
	return nil
}

// NetNSPath implements platform.Instance.
func (i *instance) NetNSPath() string {
	if i.netns != "" {
		return i.netns
	}
	return fmt.Sprintf("/proc/%d/ns/net", i.cmd.Process.Pid)
}

// imageEnv is the agent's environment, and the root its workload's
// commands run in: the machine's, or, for an instance of a user's image,
// the unpacked image's — its environment, working directory and own
// command, as in its containers.
func (p *Platform) imageEnv(spec platform.InstanceSpec) (env []string, root string, err error) {
	if spec.Image == nil {
		return os.Environ(), "", nil
	}
	u, ok := p.images[spec.Image.Key()]
	if !ok {
		return nil, "", fmt.Errorf("instance %s: image %s not prepared (Setup.Images lacks it)", spec.Name, spec.Image)
	}
	argv, _ := u.config.Command(nil)
	return invocation.ImageEnv(u.config.Env, u.config.WorkingDir, argv, userimage.DefaultPath), u.root(), nil
}

// Seen implements platform.Seer: the user's image an instance runs from.
func (in *instance) Seen() map[string]string { return maps.Clone(in.seen) }
