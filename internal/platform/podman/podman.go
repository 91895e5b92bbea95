// Package podman runs agents in podman containers, through podman's
// Docker-compatible API: ctrbench starts `podman system service` on a
// socket of its own, with a configuration of its own (never the user's
// global files), and runs docker-platform instances on it (package
// docker over package engine, the one that imports the SDK). The
// agent image is the one the machine's Docker Engine builds, saved and
// loaded into podman's own storage: never pulled.
package podman

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workdir"
)

// WorkRoot holds, per campaign, podman's configuration, storage, run
// directory and API socket.
const WorkRoot = "/var/lib/ctrbench/podman"

// config is podman's configuration for this machine, as a user would
// set it: runc (crun refuses hybrid cgroups), the cgroupfs manager and
// the file events logger (no systemd here), and explicit limits on open
// files and processes (podman's defaults exceed the hard limits; runc then
// fails with "error setting rlimit").
//
// Its networks' configurations (CNI) live in the campaign's directory, not
// in the machine's /etc/cni/net.d. Its default network and the networks it
// would choose a subnet for itself take theirs from ctrbench's pool, not
// podman's 10.88.0.0/16 and 10.89.0.0/16 and up (the campaign's bridge is
// given its subnet by the docker platform's code, as Docker's is).
func config(work string, pool subnets.Pool) string {
	inner := pool.Inner()
	return `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_config_dir = "` + filepath.Join(work, "cni") + `"
default_subnet = "` + pool.Block(subnets.InnerPool).String() + `"
default_subnet_pools = [{"base" = "` + inner.String() + `", "size" = 24}]
`
}

// bridgeOf tells podman's campaign bridge from Docker's: podman's link is
// engine.BridgeName(campaign + bridgeOf).
const bridgeOf = "-podman"

// bridgeLink is the Linux bridge of a campaign's podman bridge network.
// CNI's bridge plugin makes it and never removes it, so ctrbench does.
func bridgeLink(campaign string) string { return engine.BridgeName(campaign + bridgeOf) }

// Platform runs agents in podman containers, for one campaign.
type Platform struct {
	binary string
	outer  *docker.Platform // the machine's engine: builds and saves the agent image

	work    string
	service *exec.Cmd
	inner   *docker.Platform // podman's API
	version string
}

var _ platform.Platform = (*Platform)(nil)

// New returns a podman platform.
func New(binary string) (*Platform, error) {
	outer, err := docker.New(docker.WithBinary(binary))
	if err != nil {
		return nil, err
	}
	return &Platform{binary: binary, outer: outer}, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "podman" }

// Prepare starts podman's API service, brings the agent image into its
// storage and prepares it for the campaign.
func (p *Platform) Prepare(ctx context.Context, s platform.Setup) error {
	if p.inner != nil {
		return p.inner.Prepare(ctx, p.innerSetup(s))
	}
	outerSetup := s
	outerSetup.Networks, outerSetup.Storages, outerSetup.Options = nil, []vocab.Storage{vocab.Layer}, nil
	if err := p.outer.Prepare(ctx, outerSetup); err != nil {
		return err
	}
	work, err := workdir.Make(WorkRoot, s.CampaignID)
	if err != nil {
		return err
	}
	p.work = work
	if err := os.MkdirAll(filepath.Join(p.work, "cni"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.work, "containers.conf"), []byte(config(p.work, s.Subnets)), 0o644); err != nil {
		return err
	}
	sock := filepath.Join(p.work, "podman.sock")
	p.service = podmanCmd(p.work, "system", "service", "--time=0", "unix://"+sock)
	p.service.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	logf, err := os.Create(filepath.Join(p.work, "service.log"))
	if err != nil {
		return err
	}
	p.service.Stdout, p.service.Stderr = logf, logf
	if err := p.service.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting podman's API service: %w", err)
	}
	logf.Close()
	loader, err := engine.New(engine.WithHost("unix://" + sock))
	if err != nil {
		return err
	}
	if err := awaitService(ctx, loader); err != nil {
		return err
	}
	agent, err := p.bring(ctx, loader, p.outer.AgentImage())
	// Users' images: the outer engine put the agent into each; podman
	// runs them as the outer engine made them.
	users := map[string]engine.UserImage{}
	for key, u := range p.outer.UserImages() {
		if err == nil {
			u.Tag, err = p.bring(ctx, loader, u.Tag)
		}
		users[key] = u
	}
	_ = loader.Close()
	if err != nil {
		return err
	}
	inner, err := docker.New(docker.WithEngine(engine.WithHost("unix://"+sock), engine.WithLocalHost()), docker.WithImage(agent),
		docker.WithUserImages(users), docker.WithBridgeOf(bridgeOf), docker.WithNamespacePaths())
	if err != nil {
		return err
	}
	p.inner = inner
	if out, err := podmanCmd(p.work, "version", "--format", "{{.Server.Version}}").Output(); err == nil {
		p.version = string(trimNL(out))
	}
	fmt.Fprintf(s.Notes(), "podman: API service on %s, agent image loaded\n", sock)
	return p.inner.Prepare(ctx, p.innerSetup(s))
}

// innerSetup is the campaign's setup as podman's API takes it: the same,
// the emulated machine's cgroup included (podman's cgroupfs manager
// places its containers below it).
func (p *Platform) innerSetup(s platform.Setup) platform.Setup { return s }

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// runRoot is the campaign's podman run directory: podman refuses one
// longer than 50 characters, so it is named by a hash of the work
// directory.
func runRoot(work string) string {
	sum := sha256.Sum256([]byte(work))
	return "/run/ctbp-" + hex.EncodeToString(sum[:4])
}

// podmanCmd is podman with the campaign's configuration and storage.
func podmanCmd(work string, args ...string) *exec.Cmd {
	all := append([]string{"--root", filepath.Join(work, "root"), "--runroot", runRoot(work),
		"--tmpdir", filepath.Join(work, "tmp")}, args...)
	cmd := exec.Command("podman", all...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(work, "containers.conf"))
	return cmd
}

func awaitService(ctx context.Context, d *engine.Engine) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err := d.Ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("podman's API service did not answer: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Start implements platform.Platform.
func (p *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	if p.inner == nil {
		return nil, errors.New("podman platform: Start before Prepare")
	}
	return p.inner.Start(ctx, spec)
}

// HostAddr implements platform.Platform.
func (p *Platform) HostAddr(n vocab.Network) string {
	if p.inner == nil {
		return ""
	}
	return p.inner.HostAddr(n)
}

// Info implements platform.Platform.
func (p *Platform) Info() map[string]string {
	info := map[string]string{"podman.version": p.version, "podman.default_runtime": "runc", "podman.cgroup_manager": "cgroupfs"}
	if p.inner != nil {
		for k, v := range p.inner.Info() {
			info["podman."+k] = v
		}
	}
	return info
}

// Close removes the campaign's containers, stops podman's service, and
// removes its storage and the campaign's directory.
func (p *Platform) Close(ctx context.Context) error {
	var errs []error
	if p.inner != nil {
		errs = append(errs, p.inner.Close(ctx)) // its bridge network too
	}
	errs = append(errs, p.outer.Close(ctx))
	if p.service != nil && p.service.Process != nil {
		_ = p.service.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.service.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.service.Process.Kill()
			<-done
		}
	}
	if p.work != "" {
		errs = append(errs, removeWork(p.work))
	}
	return errors.Join(errs...)
}

// removeWork removes a campaign's podman storage: containers left in it
// (their conmon processes outlive the service), its mounts (system reset),
// then the directory.
func removeWork(work string) error {
	_ = podmanCmd(work, "rm", "-af", "-t", "0").Run()
	_ = podmanCmd(work, "system", "reset", "-f").Run()
	// What podman leaves of its bridge network: CNI's bridge and the
	// isolation rules of its firewall plugin.
	br := bridgeLink(filepath.Base(work))
	if _, err := firewall.CleanCNI(func(link string) bool { return link == br }); err != nil {
		return err
	}
	if err := links.Remove(br); err != nil {
		return err
	}
	for _, dir := range []string{runRoot(work), work} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing %s: %w", dir, err)
		}
	}
	return nil
}

// bring copies an image of the machine's engine into podman's storage
// and returns the name podman gave it: "localhost/NAME:TAG" for the
// archive of a Docker 20.10, "docker.io/library/NAME:TAG" for one of
// Docker 25 or later (an OCI layout too, which podman names by its
// annotation).
func (p *Platform) bring(ctx context.Context, loader *engine.Engine, tag string) (string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(p.outer.Engine().SaveImage(ctx, tag, pw)) }()
	loaded, err := loader.LoadImage(ctx, pr)
	pr.Close()
	if err != nil {
		return "", fmt.Errorf("loading image %s into podman: %w", tag, err)
	}
	name := engine.LoadedAs(loaded, tag)
	if name == "" {
		return "", fmt.Errorf("loading image %s into podman: podman loaded %q, not it", tag, loaded)
	}
	return name, nil
}

// Ping implements platform.Pinger: podman's service answers.
func (p *Platform) Ping(ctx context.Context) error {
	if p.inner == nil {
		return nil
	}
	return p.inner.Ping(ctx)
}
