package engine

import (
	"os"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
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
	if p.Privileged && len(p.Missing) > 0 {
		return "privileged (the engine leaves out " + strings.Join(p.Missing, ",") + ", which the bounding set lacks)"
	}
	if p.Privileged {
		return "privileged"
	}
	return "all capabilities but " + strings.Join(p.Missing, ",") + ", seccomp and apparmor unconfined, /sys/fs/cgroup read-write"
}

func (p Privileges) apply(hc *container.HostConfig) {
	if p.Privileged {
		// On an engine that leaves out what the bounding set lacks, the
		// cgroup hierarchy is read-write as for any privileged container.
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

// For is p on an engine of version v. Docker 23 and later give a
// privileged container only the capabilities the bounding set has, and
// refuse to drop one it lacks ("invalid CapDrop: capability not supported
// by your kernel or not available in the current environment", seen with
// Docker 28.2.2 here): there --privileged is the way. Docker 20.10 asks
// for every capability the kernel knows and fails ("unable to apply
// caps"): there every capability but the missing ones is asked for.
func (p Privileges) For(version string) Privileges {
	if major, _, _, ok := parseVersion(version); ok && major >= 23 && len(p.Missing) > 0 {
		p.Privileged = true
	}
	return p
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
