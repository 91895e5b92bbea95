package docker

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// daemonFacts is what the daemon says of itself, read once per campaign.
type daemonFacts struct {
	versions     map[string]string // for the campaign's environment record
	rootDir      string            // its data root, whose disk block I/O limits name
	cgroupDriver string            // cgroupfs or systemd
	runtimes     []string          // the OCI runtimes it knows, sorted
}

func readDaemon(ctx context.Context, api API) (daemonFacts, error) {
	v, err := api.ServerVersion(ctx)
	if err != nil {
		return daemonFacts{}, unreachable(api, err)
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
		return daemonFacts{}, fmt.Errorf("reading docker info: %w", err)
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
	return daemonFacts{versions: facts, rootDir: info.DockerRootDir, cgroupDriver: info.CgroupDriver, runtimes: runtimes}, nil
}
