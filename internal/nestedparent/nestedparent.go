// Package nestedparent is the first process of a nested parent container:
// it starts the parent's own Docker Engine (dockerd, which starts its
// containerd) and stays its init — it reaps orphans, passes SIGTERM on and
// exits with the engine. Children run inside that engine; their cgroups
// are placed below the parent's own, so limits on the parent bound them.
package nestedparent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Config is what a parent's engine needs; it travels as JSON on the
// command line (`ctrbench agent parent --config`).
type Config struct {
	// Socket is where the engine's API listens, in a directory the host
	// shares with the parent.
	Socket string `json:"socket"`
	// DataRoot is the engine's data root (a tmpfs in the parent).
	DataRoot string `json:"data_root"`
	// BIP is the inner default bridge's address and prefix
	// ("198.19.224.1/26"): the engine makes its bridge and NAT rules in the
	// parent's own namespace.
	BIP string `json:"bip,omitempty"`
	// Pool is where the engine takes the subnets of the networks it makes
	// itself (a swarm node's docker_gwbridge), in CIDR: ctrbench's subnet
	// pool, never the engine's defaults (172.17.0.0/16 and up).
	Pool string `json:"pool,omitempty"`
	// Bridge is, for a parent on the machine's own network, a bridge
	// ctrbench made there for the engine to take as its default bridge,
	// with no iptables rules and no forwarding: an engine with no bridge
	// at all deletes the machine's docker0 (dockerd's --bridge=none does),
	// and one with its own would make one and NAT rules in the machine's
	// namespace. Its children share the parent's (the machine's) network.
	Bridge string `json:"bridge,omitempty"`
	// Preloaded is a read-only image store prepared once per campaign (an
	// engine's data root holding the agent image); the data root starts as
	// a copy of its metadata with its layers mounted read-only.
	Preloaded string `json:"preloaded,omitempty"`
	// Dockerd is the engine's program (default "dockerd" in PATH).
	Dockerd string `json:"dockerd,omitempty"`
}

// Parse reads the --config form.
func Parse(s string) (Config, error) {
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("parent configuration: %w", err)
	}
	if c.Socket == "" || c.DataRoot == "" {
		return c, errors.New("parent configuration: socket and data_root are required")
	}
	return c, nil
}

// String is the --config form.
func (c Config) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Args are the engine's command line.
func (c Config) Args(cgroupParent string) []string {
	args := []string{"--host", "unix://" + c.Socket, "--data-root", c.DataRoot,
		"--exec-root", "/run/docker", "--pidfile", "/run/docker.pid",
		"--log-level", "warn", "--shutdown-timeout", "2"}
	if cgroupParent != "" && cgroupParent != "/" {
		args = append(args, "--cgroup-parent", cgroupParent)
	}
	if c.Pool != "" {
		args = append(args, "--default-address-pool", "base="+c.Pool+",size=24")
	}
	switch {
	case c.BIP != "":
		args = append(args, "--bip", c.BIP)
	case c.Bridge != "":
		args = append(args, "--bridge", c.Bridge, "--iptables=false", "--ip-masq=false", "--ip-forward=false")
	default: // a namespace of the parent's own that the lab wires
		args = append(args, "--bridge", "none", "--iptables=false", "--ip-masq=false")
	}
	return args
}

// Run starts the engine and waits for it, as the container's init.
func Run(ctx context.Context, c Config, stderr io.Writer) error {
	cg, err := ownCgroup("/proc/self/cgroup")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.Socket), 0o755); err != nil {
		return err
	}
	_ = os.Remove(c.Socket) // a stale socket of an earlier engine
	if err := os.MkdirAll(c.DataRoot, 0o711); err != nil {
		return err
	}
	if c.Preloaded != "" {
		if err := Populate(c.DataRoot, c.Preloaded); err != nil {
			return fmt.Errorf("preloaded image store %s: %w", c.Preloaded, err)
		}
	}
	dockerd := c.Dockerd
	if dockerd == "" {
		dockerd = "dockerd"
	}
	path, err := lookPath(dockerd)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGCHLD)
	defer signal.Stop(sigs)
	proc, err := os.StartProcess(path, append([]string{"dockerd"}, c.Args(cg)...), &os.ProcAttr{
		Env:   []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Files: []*os.File{nil, os.Stderr, os.Stderr},
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	fmt.Fprintf(stderr, "parent: started %s (pid %d) with %s\n", path, proc.Pid, strings.Join(c.Args(cg), " "))
	for {
		select {
		case s := <-sigs:
			if s != unix.SIGCHLD {
				_ = proc.Signal(unix.SIGTERM)
				continue
			}
		case <-ctx.Done():
			_ = proc.Signal(unix.SIGTERM)
		}
		// Reap every child that ended: orphans re-parented to this init,
		// and the engine itself, whose end is the parent's.
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err != nil || pid <= 0 {
				break
			}
			if pid == proc.Pid {
				if ws.ExitStatus() != 0 || ws.Signaled() {
					return fmt.Errorf("dockerd ended: %v", exitString(ws))
				}
				return nil
			}
		}
	}
}

func exitString(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// ownCgroup is the process's cgroup path as the host sees it (cgroup v1
// shares the host's cgroup namespace with Docker's containers): the
// memory controller's, else the first listed.
func ownCgroup(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	first := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if first == "" && parts[2] != "/" {
			first = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return parts[2], nil
			}
		}
	}
	return first, sc.Err()
}

func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in the parent image", name)
}

// storeDirs are the parts of a data root that hold images: the rest (its
// networks, containers, runtimes) is the seed engine's own and is not
// carried over.
var storeDirs = []string{"image", "overlay2"}

// Populate makes dst an engine data root from the prepared store src:
// its image parts copied, except the overlay2 layers' contents
// (overlay2/<id>/diff), which are bind-mounted read-only — the store's
// layers are shared, never written (each container's writable layer is a
// new directory of its own).
func Populate(dst, src string) error {
	for _, dir := range storeDirs {
		if err := populateDir(dst, src, dir); err != nil {
			return err
		}
	}
	return nil
}

func populateDir(dst, src, dir string) error {
	return filepath.WalkDir(filepath.Join(src, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && isLayerDiff(rel):
			if err := os.MkdirAll(target, info.Mode().Perm()); err != nil {
				return err
			}
			if err := unix.Mount(p, target, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("mounting layer %s: %w", rel, err)
			}
			if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("making layer %s read-only: %w", rel, err)
			}
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(target, p, info.Mode().Perm())
		}
		return nil // sockets, devices: an engine's store has none that matter
	})
}

// isLayerDiff reports whether rel is an overlay2 layer's content directory.
func isLayerDiff(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	return len(parts) == 3 && parts[0] == "overlay2" && parts[2] == "diff"
}

func copyFile(dst, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
