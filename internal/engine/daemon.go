package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Facts are what the daemon says of itself, read once per campaign.
type Facts struct {
	Versions     map[string]string // for the campaign's environment record
	RootDir      string            // its data root, whose disk block I/O limits name
	CgroupDriver string            // cgroupfs or systemd
	Runtimes     []string          // the OCI runtimes it knows, sorted
	// StorageDriver is its storage driver (overlay2, fuse-overlayfs, vfs)
	// or, with the containerd image store, its snapshotter (overlayfs).
	StorageDriver string
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
	for _, c := range v.Components {
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
	return Facts{Versions: facts, RootDir: info.DockerRootDir, CgroupDriver: info.CgroupDriver, Runtimes: runtimes, StorageDriver: info.Driver}, nil
}
