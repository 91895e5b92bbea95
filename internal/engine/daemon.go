package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// EnvImageStore is the environment record's key for an engine whose
// images are in containerd's image store.
const EnvImageStore = "docker.image_store"

// Facts are what the daemon says of itself, read once per campaign.
type Facts struct {
	Versions     map[string]string // for the campaign's environment record
	RootDir      string            // its data root, whose disk block I/O limits name
	CgroupDriver string            // cgroupfs or systemd
	Runtimes     []string          // the OCI runtimes it knows, sorted
	// Podman: the engine is podman's Docker-compatible service, not a
	// Docker Engine.
	Podman bool
	// StorageDriver is its storage driver (overlay2, fuse-overlayfs, vfs)
	// or, with the containerd image store, its snapshotter (overlayfs).
	StorageDriver string
	// Snapshotter: its images are in containerd's image store (the
	// containerd-snapshotter feature), StorageDriver being the
	// snapshotter.
	Snapshotter bool
}

// LayerFS is the file system type a container's root (its image's layers
// and its own) is mounted as under the storage driver, as statfs names
// it: "overlay" for overlay2 and containerd's overlayfs snapshotter,
// "fuse" for fuse-overlayfs (a FUSE file system); "" when the driver
// names none (vfs copies layers onto the data root's own file system).
func (f Facts) LayerFS() string {
	switch f.StorageDriver {
	case "overlay2", "overlay", "overlayfs":
		return "overlay"
	case "fuse-overlayfs":
		return "fuse"
	case "btrfs", "zfs":
		return f.StorageDriver
	}
	return ""
}

// Facts reads the daemon's versions and configuration.
func (e *Engine) Facts(ctx context.Context) (Facts, error) {
	api := e.api
	v, err := api.ServerVersion(ctx)
	if err != nil {
		return Facts{}, unreachable(api, err)
	}
	facts := map[string]string{
		result.EnvDocker:            v.Version,
		"docker.api_version":        v.APIVersion,
		"docker.client_api_version": api.ClientVersion(),
		"docker.os":                 v.Os,
		"docker.arch":               v.Arch,
		"docker.kernel":             v.KernelVersion,
	}
	podman := strings.Contains(strings.ToLower(v.Platform.Name), "podman")
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			podman = true
		}
		switch c.Name {
		case "containerd":
			facts[result.EnvContainerd] = c.Version
		case "runc":
			facts[result.EnvRunc] = c.Version
		}
	}
	info, err := api.Info(ctx)
	if err != nil {
		return Facts{}, fmt.Errorf("reading docker info: %w", err)
	}
	facts[result.EnvCgroupDriver] = info.CgroupDriver
	facts[result.EnvCgroupVersion] = info.CgroupVersion
	facts[result.EnvStorageDriver] = info.Driver
	if snapshotter(info.DriverStatus) {
		facts[EnvImageStore] = "containerd"
	}
	facts[result.EnvDefaultRuntime] = info.DefaultRuntime
	var runtimes []string
	for name := range info.Runtimes {
		runtimes = append(runtimes, name)
	}
	sort.Strings(runtimes)
	facts["docker.runtimes"] = strings.Join(runtimes, ",")
	for k, v := range facts {
		if v == "" {
			delete(facts, k)
		}
	}
	return Facts{Versions: facts, RootDir: info.DockerRootDir, CgroupDriver: info.CgroupDriver, Runtimes: runtimes, StorageDriver: info.Driver, Podman: podman, Snapshotter: snapshotter(info.DriverStatus)}, nil
}

// EndsTogetherDeadlock reports whether a Docker Engine of this version
// deadlocks when many of its containers end at once: libnetwork took its
// network and controller locks in opposite orders when a container left a
// network and when another's endpoint deletion was processed
// (moby/moby#42545, in 23.0; backported to 20.10.27 by
// moby/libnetwork#2679). Debian bookworm's docker.io 20.10.24 has it (seen
// here at the end of a 50-pair trial: the engine answered nothing until
// restarted); Docker 23 and later do not. An engine that is not Docker's
// (podman's compatible service) has no libnetwork. A version that cannot
// be read is taken to have it: ending one at a time costs seconds, a
// deadlock the campaign.
func EndsTogetherDeadlock(version string) bool {
	major, minor, patch, ok := parseVersion(version)
	if !ok {
		return true
	}
	switch {
	case major < 20, major == 20 && minor < 10:
		return true
	case major == 20 && minor == 10:
		return patch < 27
	}
	return major < 23
}

// parseVersion reads "20.10.24+dfsg1", "28.2.2", "v28.5.0-rc.1".
func parseVersion(v string) (major, minor, patch int, ok bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "+-~ "); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return 0, 0, 0, false
	}
	nums := make([]int, 3)
	for i := 0; i < len(parts) && i < 3; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return 0, 0, 0, false
		}
		nums[i] = n
	}
	return nums[0], nums[1], nums[2], true
}

// EndOneAtATime reports whether this engine's containers must end one at
// a time (EndsTogetherDeadlock): a Docker Engine of such a version.
func (f Facts) EndOneAtATime() bool {
	return !f.Podman && EndsTogetherDeadlock(f.Versions[result.EnvDocker])
}

// FiltersDirectAccess reports whether the engine drops packets addressed
// to a container of a NAT bridge network that do not come in through its
// bridge (Docker 28.0 and later: raw-table rules per container, and a
// DROP in its DOCKER chain for all but published ports), so another
// bridge's client reaches a container only where ctrbench lets it
// (firewall.AllowDirect).
func (f Facts) FiltersDirectAccess() bool {
	major, _, _, ok := parseVersion(f.Versions[result.EnvDocker])
	return !f.Podman && ok && major >= 28
}

// GatewayModeOption is the bridge driver's option that sets a network's
// IPv4 gateway mode (Docker 28: nat, nat-unprotected, routed, isolated).
const GatewayModeOption = "com.docker.network.bridge.gateway_mode_ipv4"

// HasGatewayModes says why the engine has no bridge gateway modes (nil
// when it has them): they came with Docker 28.0; an older engine ignores
// the option and makes a NAT bridge.
func (f Facts) HasGatewayModes() error {
	v := f.Versions[result.EnvDocker]
	if major, _, _, ok := parseVersion(v); f.Podman || !ok || major < 28 {
		what := "Docker Engine " + v
		if f.Podman {
			what = "podman's service " + v
		}
		return fmt.Errorf("bridge gateway modes (routed, nat-unprotected) came with Docker Engine 28.0; this engine is %s", what)
	}
	return nil
}

// snapshotter reports whether a daemon's driver status says its images
// are in containerd's image store ("driver-type
// io.containerd.snapshotter.v1").
func snapshotter(status [][2]string) bool {
	for _, kv := range status {
		if kv[0] == "driver-type" && strings.HasPrefix(kv[1], "io.containerd.snapshotter") {
			return true
		}
	}
	return false
}

// ImageStore is where the engine keeps images: "containerd" (containerd's
// image store) or its storage driver's name (overlay2, fuse-overlayfs…).
func (f Facts) ImageStore() string {
	if f.Snapshotter {
		return "containerd"
	}
	return f.StorageDriver
}

// HasContainerdStore says why the engine cannot keep its images in
// containerd's image store (nil when it can): an option since Docker
// Engine 24.
func (f Facts) HasContainerdStore() error {
	v := f.Versions[result.EnvDocker]
	if major, _, _, ok := parseVersion(v); f.Podman || !ok || major < 24 {
		return fmt.Errorf("the containerd image store came with Docker Engine 24; this engine is %s", v)
	}
	return nil
}
