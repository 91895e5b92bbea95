package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// EngineSpec is a container that runs a container engine of its own: a
// nested parent. It gets the privileges an inner engine needs (see
// EnginePrivileges), its own image and command, and mounts.
type EngineSpec struct {
	Image string   // a tag EnsureImage returned
	Cmd   []string // replaces the agent's command line
	// Binds are host:container[:ro] bind mounts; Tmpfs container paths
	// mounted as tmpfs with their options.
	Binds []string
	Tmpfs map[string]string
	// Sysctls are namespaced kernel settings of the container (its own
	// network namespace's: /proc/sys is read-only inside).
	Sysctls map[string]string
	// Hostname is the container's host name ("" for Docker's default, its
	// short ID): a swarm node's name.
	Hostname string
}

// StartEngine starts a container that hosts an engine, placed, limited
// and labelled as spec says.
func (p *Platform) StartEngine(ctx context.Context, spec platform.InstanceSpec, e EngineSpec) (platform.Instance, error) {
	priv := EnginePrivileges()
	return p.startWith(ctx, spec, func(cfg *container.Config, hc *container.HostConfig) {
		cfg.Image, cfg.Cmd = e.Image, e.Cmd
		if e.Hostname != "" {
			cfg.Hostname = e.Hostname
		}
		hc.Binds = append(hc.Binds, e.Binds...)
		if hc.Tmpfs == nil {
			hc.Tmpfs = map[string]string{}
		}
		for k, v := range e.Tmpfs {
			hc.Tmpfs[k] = v
		}
		if len(e.Sysctls) > 0 {
			hc.Sysctls = e.Sysctls
		}
		priv.apply(hc)
	})
}

// Privileges are how a container is allowed to run an engine inside.
type Privileges struct {
	// Privileged: Docker's --privileged works here (the machine's bounding
	// set has every capability).
	Privileged bool
	// Missing are the capabilities the bounding set lacks; without
	// Privileged the container gets every capability but these, no seccomp
	// or AppArmor confinement, and the cgroup hierarchy read-write.
	Missing []string
}

// String says what was used, for the campaign's record.
func (p Privileges) String() string {
	if p.Privileged {
		return "privileged"
	}
	return "all capabilities but " + strings.Join(p.Missing, ",") + ", seccomp and apparmor unconfined, /sys/fs/cgroup read-write"
}

func (p Privileges) apply(hc *container.HostConfig) {
	if p.Privileged {
		hc.Privileged = true
		return
	}
	hc.CapAdd = append(hc.CapAdd, "ALL")
	hc.CapDrop = append(hc.CapDrop, p.Missing...)
	hc.SecurityOpt = append(hc.SecurityOpt, "seccomp=unconfined", "apparmor=unconfined")
	hc.Binds = append(hc.Binds, "/sys/fs/cgroup:/sys/fs/cgroup:rw")
}

// EnginePrivileges detects what this machine allows: --privileged asks for
// every capability the kernel knows, which fails ("unable to apply caps")
// where the bounding set lacks one — this project's machines lack
// CAP_SYS_RESOURCE. Then every capability but the missing ones is asked
// for instead.
func EnginePrivileges() Privileges {
	last, err1 := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	status, err2 := os.ReadFile("/proc/self/status")
	if err1 != nil || err2 != nil {
		return Privileges{Privileged: true}
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(last)))
	if err != nil {
		return Privileges{Privileged: true}
	}
	var bnd uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	var missing []string
	for c := 0; c <= n && c < 64; c++ {
		if bnd&(1<<c) == 0 {
			missing = append(missing, capName(c))
		}
	}
	return Privileges{Privileged: len(missing) == 0, Missing: missing}
}

// capNames are the Linux capabilities by number, as Docker names them.
var capNames = []string{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"}

func capName(c int) string {
	if c < len(capNames) {
		return "CAP_" + capNames[c]
	}
	return "CAP_" + strconv.Itoa(c)
}

// EnsureImage builds the image in (content-addressed, FROM scratch) unless
// an image of that tag is there already, and returns its tag. Nothing is
// pulled.
func (p *Platform) EnsureImage(ctx context.Context, in image.Input, labels map[string]string, progress io.Writer) (string, error) {
	plan, err := image.Plan(in)
	if err != nil {
		return "", fmt.Errorf("planning image: %w", err)
	}
	if len(plan.Missing) > 0 {
		return "", fmt.Errorf("image %s: not installed on this host: %s", plan.Tag, strings.Join(plan.Missing, ", "))
	}
	if _, err := p.api.ImageInspect(ctx, plan.Tag); err == nil {
		return plan.Tag, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspecting image %s: %w", plan.Tag, err)
	}
	start := time.Now()
	if err := buildImage(ctx, p.api, plan, objectLabels("", labels)); err != nil {
		return "", fmt.Errorf("building image %s: %w", plan.Tag, err)
	}
	fmt.Fprintf(progress, "docker: built image %s in %.1fs\n", plan.Tag, time.Since(start).Seconds())
	return plan.Tag, nil
}

// AgentImage is the campaign's agent image tag ("" before Prepare).
func (p *Platform) AgentImage() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.camp == nil {
		return ""
	}
	return p.camp.image.tag
}

// SaveImage writes the campaign's agent image as `docker save` does.
func (p *Platform) SaveImage(ctx context.Context, w io.Writer) error {
	tag := p.AgentImage()
	if tag == "" {
		return errNoPrepare
	}
	rc, err := p.api.ImageSave(ctx, []string{tag})
	if err != nil {
		return fmt.Errorf("saving image %s: %w", tag, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("saving image %s: %w", tag, err)
	}
	return nil
}

// LoadImage loads a saved image into the engine, as `docker load` does.
func (p *Platform) LoadImage(ctx context.Context, r io.Reader) error {
	resp, err := p.api.ImageLoad(ctx, r)
	if err != nil {
		return fmt.Errorf("loading image: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("loading image: %w", err)
	}
	if strings.Contains(string(out), `"error"`) {
		return fmt.Errorf("loading image: %s", strings.TrimSpace(string(out)))
	}
	return nil
}

// Ping reports whether the engine answers.
func (p *Platform) Ping(ctx context.Context) error {
	_, err := p.api.Ping(ctx)
	return err
}

// Disconnect closes the connection to the engine without removing
// anything: for an engine that is about to go as a whole (a nested
// parent's, with its containers inside).
func (p *Platform) Disconnect() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.owned {
		return p.api.Close()
	}
	return nil
}

// EnsureAgentImage builds the agent image with tools in this engine,
// unless it is there, and returns its tag; BuiltImage then says whether
// it was built now. A swarm manager's engine gets it this way: the build
// context goes over the API, nothing is pulled.
func (p *Platform) EnsureAgentImage(ctx context.Context, tools []string, labels map[string]string, progress io.Writer) (string, error) {
	img, err := ensureImage(ctx, p.api, p.binary, tools, labels, progress)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.built = !img.reused
	p.mu.Unlock()
	return img.tag, nil
}

// BuiltImage reports whether EnsureAgentImage built the image.
func (p *Platform) BuiltImage() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.built
}
