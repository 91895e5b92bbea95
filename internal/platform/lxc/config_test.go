package lxc

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
)

func TestConfigKeys(t *testing.T) {
	base := containerConfig{Name: strings.Repeat("x", 50) + "-campaign-t100-server-d2e6", Rootfs: "/r", Delta: "/d", Cgroup: "ctrbench/c/n", Monitor: "ctrbench/c/lxc.monitor/n", AppArmor: "unconfined"}
	for _, tc := range []struct {
		name string
		mod  func(*containerConfig)
		want []string
		not  []string
	}{
		{"host network, v1 limits", func(c *containerConfig) {
			c.HostNet = true
			c.Limits = platform.Limits{CPUs: 0.5, Cpuset: "0", MemoryBytes: 64 << 20, BlkioWeight: 300, ReadBps: 1 << 20}
			c.Device = "8:0"
		}, []string{"lxc.net.0.type = none\n", "lxc.cgroup.cpu.cfs_quota_us = 50000\n", "lxc.cgroup.cpu.cfs_period_us = 100000\n",
			"lxc.cgroup.cpuset.cpus = 0\n", "lxc.cgroup.memory.limit_in_bytes = 67108864\n", "lxc.cgroup.blkio.weight = 300\n",
			"lxc.cgroup.blkio.throttle.read_bps_device = 8:0 1048576\n", "lxc.rootfs.path = overlay:/r:/d\n",
			"lxc.cgroup.dir.container = ctrbench/c/n\n", "lxc.mount.auto = proc:rw sys:ro cgroup:ro:force\n"},
			[]string{"write_bps", "lxc.mount.entry"}},
		{"v2 limits", func(c *containerConfig) {
			c.V2, c.HostNet = true, true
			c.Limits = platform.Limits{CPUs: 1.5, MemoryBytes: 1 << 30, WriteBps: 2 << 20}
			c.Device = "8:0"
		}, []string{"lxc.cgroup2.cpu.max = 150000 100000\n", "lxc.cgroup2.memory.max = 1073741824\n", "lxc.cgroup2.io.max = 8:0 wbps=2097152\n"},
			[]string{"lxc.cgroup.cpu"}},
		{"bridge and a volume", func(c *containerConfig) {
			c.Bridge, c.VethHost, c.Address, c.Broadcast, c.Gateway = "ctbl1", "ctbl1v2", "198.18.202.2/24", "198.18.202.255", "198.18.202.1"
			c.VolumeDir = "/w/volume"
		}, []string{"lxc.net.0.type = veth\n", "lxc.net.0.link = ctbl1\n", "lxc.net.0.veth.pair = ctbl1v2\n",
			"lxc.net.0.ipv4.address = 198.18.202.2/24 198.18.202.255\n", "lxc.net.0.ipv4.gateway = 198.18.202.1\n",
			"lxc.mount.entry = /w/volume data none bind,create=dir 0 0\n"}, nil},
		{"joined namespace and a tmpfs", func(c *containerConfig) {
			c.JoinNetNS, c.Tmpfs = "/proc/42/ns/net", true
		}, []string{"lxc.net.0.type = none\n", "lxc.namespace.share.net = /proc/42/ns/net\n", "lxc.mount.entry = tmpfs data tmpfs rw,exec,create=dir 0 0\n"}, nil},
		{"wired by the lab", func(c *containerConfig) { c.Empty = true }, []string{"lxc.net.0.type = empty\n"}, []string{"lxc.net.0.link"}},
	} {
		c := base
		tc.mod(&c)
		got := c.Config()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: want %q in\n%s", tc.name, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: do not want %q in\n%s", tc.name, n, got)
			}
		}
		// A host name is at most 63 characters; the end (trial, role) is kept.
		if !strings.Contains(got, "lxc.uts.name = "+hostname(c.Name)+"\n") || len(hostname(c.Name)) > 63 || !strings.HasSuffix(hostname(c.Name), "t100-server-d2e6") {
			t.Errorf("%s: host name %q", tc.name, hostname(c.Name))
		}
	}
}
