package engine

import (
	"slices"
	"testing"

	"github.com/docker/docker/api/types/mount"
)

// A spec becomes the Engine API's configuration field by field: limits
// (memory+swap as given, block I/O throttles only when set), the volume
// mount, tmpfs, and for an engine container its binds before the cgroup
// hierarchy's, without changing the caller's slice.
func TestContainerConfigs(t *testing.T) {
	cfg, hc := ContainerSpec{Name: "x", Image: "img", Cmd: []string{"agent"}, Labels: map[string]string{"k": "v"}, Network: "host",
		Runtime: "runc", Attach: true, Resources: Resources{NanoCPUs: 5e8, CpusetCpus: "0", Memory: 1 << 20, MemorySwap: 1 << 20, CgroupParent: "/ctrbench"},
		Volume: "vol", VolumeTarget: "/data"}.configs()
	if cfg.Image != "img" || !cfg.AttachStdout || !cfg.AttachStderr || cfg.Hostname != "" || cfg.Labels["k"] != "v" {
		t.Errorf("config %+v", cfg)
	}
	if hc.NetworkMode != "host" || hc.Runtime != "runc" || hc.NanoCPUs != 5e8 || hc.CpusetCpus != "0" || hc.Memory != 1<<20 || hc.MemorySwap != 1<<20 ||
		hc.CgroupParent != "/ctrbench" || hc.BlkioDeviceReadBps != nil || hc.BlkioDeviceWriteBps != nil || hc.Privileged || hc.Binds != nil || hc.Sysctls != nil {
		t.Errorf("host config %+v", hc)
	}
	if len(hc.Mounts) != 1 || hc.Mounts[0] != (mount.Mount{Type: mount.TypeVolume, Source: "vol", Target: "/data"}) {
		t.Errorf("mounts %+v", hc.Mounts)
	}

	binds := make([]string, 1, 4)
	binds[0] = "/s:/ctb"
	_, hc = ContainerSpec{Binds: binds, Tmpfs: map[string]string{"/run": "rw,exec"}, Sysctls: map[string]string{"net.ipv4.ip_forward": "1"},
		Resources:  Resources{ReadBps: []Throttle{{Path: "/dev/sda", Rate: 10}}},
		Privileges: &Privileges{Missing: []string{"CAP_SYS_RESOURCE"}}}.configs()
	if !slices.Equal(hc.Binds, []string{"/s:/ctb", "/sys/fs/cgroup:/sys/fs/cgroup:rw"}) || len(binds) != 1 || binds[:2][1] != "" {
		t.Errorf("binds %v (the caller's %v)", hc.Binds, binds[:2])
	}
	if hc.Privileged || !slices.Equal(hc.CapAdd, []string{"ALL"}) || !slices.Equal(hc.CapDrop, []string{"CAP_SYS_RESOURCE"}) ||
		!slices.Equal(hc.SecurityOpt, []string{"seccomp=unconfined", "apparmor=unconfined"}) || hc.Tmpfs["/run"] != "rw,exec" || hc.Sysctls["net.ipv4.ip_forward"] != "1" {
		t.Errorf("engine container's host config %+v", hc)
	}
	if r := hc.BlkioDeviceReadBps; len(r) != 1 || r[0].Path != "/dev/sda" || r[0].Rate != 10 {
		t.Errorf("read throttle %+v", hc.BlkioDeviceReadBps)
	}
	if _, hc := (ContainerSpec{Privileges: &Privileges{Privileged: true}}).configs(); !hc.Privileged || hc.Binds != nil {
		t.Errorf("privileged: %+v", hc)
	}
}
