package lxc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// containerConfig is what one container's LXC configuration says; Config
// writes it in LXC's own keys.
type containerConfig struct {
	Name    string
	Rootfs  string // the shared root file system, read-only lower layer
	Delta   string // the container's own writable upper layer
	Cgroup  string // the container's cgroup, below the root
	Monitor string // lxc-execute's own cgroup (outside the container's limits)
	V2      bool   // the host's cgroups are unified (cgroup2 keys)
	// Network: exactly one of these.
	HostNet   bool   // the machine's namespace
	JoinNetNS string // another container's namespace, by /proc path
	Bridge    string // a veth into this bridge, with Address and Gateway
	Empty     bool   // a namespace with only loopback (ctrbench wires it)
	VethHost  string // the host end of the veth, named ctb…
	Address   string // CIDR, e.g. 198.18.202.5/24
	Broadcast string
	Gateway   string
	// DataMount is how the data directory is mounted: "" (on the layer),
	// a tmpfs, or a bind of VolumeDir.
	Tmpfs     bool
	VolumeDir string
	Limits    platform.Limits
	Device    string // "major:minor" of the disk the bps limits apply to
	// AppArmor: the profile, "unconfined" when AppArmor is off.
	AppArmor string
	// Env is the container's environment (a user's image's); nil: PATH
	// as in the agent image.
	Env []string
}

// dataMount is where the data directory of a tmpfs or volume is mounted.
const dataMount = "/data"

// envPath is the search path of the agent, as in the Docker image.
const envPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Config renders c as an LXC configuration file.
func (c containerConfig) Config() string {
	var b strings.Builder
	set := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	set("lxc.uts.name", hostname(c.Name))
	// An overlay of the shared root file system: each container writes to
	// a layer of its own, as a Docker container writes to its overlay2
	// layer.
	set("lxc.rootfs.path", "overlay:"+c.Rootfs+":"+c.Delta)
	// proc and sys as LXC's templates mount them; cgroup read-only and
	// forced, so the agent reads back the limits it runs under (without
	// force LXC leaves the mount to a container that holds CAP_SYS_ADMIN).
	set("lxc.mount.auto", "proc:rw sys:ro cgroup:ro:force")
	set("lxc.autodev", "1")
	set("lxc.tty.max", "0")
	set("lxc.pty.max", "0")
	set("lxc.console.path", "none")
	set("lxc.apparmor.profile", c.AppArmor)
	if !slices.ContainsFunc(c.Env, func(s string) bool { return strings.HasPrefix(s, "PATH=") }) {
		set("lxc.environment", "PATH="+envPath)
	}
	for _, e := range c.Env {
		set("lxc.environment", e)
	}
	// The container's processes in exactly Cgroup (as Docker places a
	// container in its cgroup parent); LXC's monitor apart, so it is not
	// counted against the container's limits.
	set("lxc.cgroup.dir.container", c.Cgroup)
	set("lxc.cgroup.dir.monitor", c.Monitor)
	switch {
	case c.JoinNetNS != "":
		set("lxc.net.0.type", "none")
		set("lxc.namespace.share.net", c.JoinNetNS)
	case c.HostNet:
		set("lxc.net.0.type", "none")
	case c.Bridge != "":
		set("lxc.net.0.type", "veth")
		set("lxc.net.0.link", c.Bridge)
		set("lxc.net.0.veth.pair", c.VethHost)
		set("lxc.net.0.name", "eth0")
		set("lxc.net.0.flags", "up")
		set("lxc.net.0.ipv4.address", c.Address+" "+c.Broadcast)
		set("lxc.net.0.ipv4.gateway", c.Gateway)
	default:
		set("lxc.net.0.type", "empty")
	}
	switch {
	case c.Tmpfs:
		set("lxc.mount.entry", "tmpfs "+strings.TrimPrefix(dataMount, "/")+" tmpfs rw,exec,create=dir 0 0")
	case c.VolumeDir != "":
		set("lxc.mount.entry", c.VolumeDir+" "+strings.TrimPrefix(dataMount, "/")+" none bind,create=dir 0 0")
	}
	for _, kv := range c.cgroupKeys() {
		set(kv[0], kv[1])
	}
	return b.String()
}

// cgroupKeys are the limits as LXC's cgroup keys, v1 or v2.
func (c containerConfig) cgroupKeys() [][2]string {
	l := c.Limits
	var out [][2]string
	add := func(k, v string) {
		prefix := "lxc.cgroup."
		if c.V2 {
			prefix = "lxc.cgroup2."
		}
		out = append(out, [2]string{prefix + k, v})
	}
	const period = 100000
	if l.CPUs > 0 {
		q := strconv.Itoa(int(l.CPUs * period))
		if c.V2 {
			add("cpu.max", q+" "+strconv.Itoa(period))
		} else {
			add("cpu.cfs_period_us", strconv.Itoa(period))
			add("cpu.cfs_quota_us", q)
		}
	}
	if l.Cpuset != "" {
		add("cpuset.cpus", l.Cpuset)
	}
	if l.MemoryBytes > 0 {
		if c.V2 {
			add("memory.max", strconv.FormatInt(l.MemoryBytes, 10))
		} else {
			add("memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10))
		}
	}
	if l.Pids > 0 {
		add("pids.max", strconv.FormatInt(l.Pids, 10))
	}
	if l.BlkioWeight > 0 {
		if c.V2 {
			add("io.weight", "default "+strconv.Itoa(int(l.BlkioWeight)))
		} else {
			add("blkio.weight", strconv.Itoa(int(l.BlkioWeight)))
		}
	}
	if c.Device != "" && (l.ReadBps > 0 || l.WriteBps > 0) {
		if c.V2 {
			v := c.Device
			if l.ReadBps > 0 {
				v += " rbps=" + strconv.FormatInt(l.ReadBps, 10)
			}
			if l.WriteBps > 0 {
				v += " wbps=" + strconv.FormatInt(l.WriteBps, 10)
			}
			add("io.max", v)
		} else {
			if l.ReadBps > 0 {
				add("blkio.throttle.read_bps_device", c.Device+" "+strconv.FormatInt(l.ReadBps, 10))
			}
			if l.WriteBps > 0 {
				add("blkio.throttle.write_bps_device", c.Device+" "+strconv.FormatInt(l.WriteBps, 10))
			}
		}
	}
	return out
}

// hostname is a container's host name: its name, or the end of it (the
// trial and role) where the name is longer than a host name may be.
func hostname(name string) string {
	const max = 63
	if len(name) > max {
		name = strings.TrimLeft(name[len(name)-max:], "-.")
	}
	return name
}
