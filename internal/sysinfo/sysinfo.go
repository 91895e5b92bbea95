// Package sysinfo fingerprints the machine a campaign ran on, so numbers are
// never separated from what produced them.
package sysinfo

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Version of ctrbench, set at build time with -ldflags "-X ...sysinfo.Version=...".
var Version = "dev"

// Fingerprint describes the host: its hardware, its tuning and the load
// at the start (machineTuning; it samples the processes for ~200 ms).
// tools are external binaries whose versions are recorded.
func Fingerprint(tools []string) map[string]string {
	env := map[string]string{
		result.EnvCtrbench: Version,
		"go.version":       runtime.Version(),
		result.EnvCPUCores: strconv.Itoa(runtime.NumCPU()),
		"arch":             runtime.GOARCH,
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		env[result.EnvKernel] = cstr(u.Release[:])
		env["kernel.version"] = cstr(u.Version[:])
	}
	if h, err := os.Hostname(); err == nil {
		env[result.EnvHostname] = h
	}
	if m := fileField("/proc/cpuinfo", "model name", ':'); m != "" {
		env[result.EnvCPUModel] = m
	}
	if m := fileField("/proc/meminfo", "MemTotal", ':'); m != "" {
		f := strings.Fields(m)
		if len(f) > 0 {
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			env[result.EnvMemory] = strconv.FormatInt(kb*1024, 10)
		}
	}
	if p := fileField("/etc/os-release", "PRETTY_NAME", '='); p != "" {
		env[result.EnvOS] = strings.Trim(p, `"`)
	}
	machineTuning(env)
	for _, t := range tools {
		if v := ToolVersion(t); v != "" {
			env["tool."+t] = v
		}
	}
	return env
}

// ToolVersion returns the first line a tool prints for --version, or "".
func ToolVersion(tool string) string {
	path, err := exec.LookPath(tool)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func cstr(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// fileField returns the value after sep of the first line starting with key.
func fileField(path, key string, sep byte) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, key) {
			if i := strings.IndexByte(line, sep); i >= 0 {
				return strings.TrimSpace(line[i+1:])
			}
		}
	}
	return ""
}

// Machine returns the CPU count and memory for validating limits.
func Machine() (cpus int, memBytes int64) {
	cpus = runtime.NumCPU()
	if m := fileField("/proc/meminfo", "MemTotal", ':'); m != "" {
		f := strings.Fields(m)
		if len(f) > 0 {
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			memBytes = kb * 1024
		}
	}
	return cpus, memBytes
}

// BlockDevice finds the whole disk holding path: its device node (e.g.
// /dev/vda) and "major:minor", which blkio throttle limits name. A
// partition resolves to its disk; a filesystem without a block device
// (tmpfs, overlay on tmpfs) is an error.
func BlockDevice(path string) (node, majMin string, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", "", err
	}
	major, minor := (st.Dev>>8)&0xfff|(st.Dev>>32)&^0xfff, st.Dev&0xff|(st.Dev>>12)&^0xff
	sys := "/sys/dev/block/" + strconv.FormatUint(major, 10) + ":" + strconv.FormatUint(minor, 10)
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return "", "", fmt.Errorf("%s is not on a block device (device %d:%d)", path, major, minor)
	}
	if _, err := os.Stat(real + "/partition"); err == nil {
		real = real[:strings.LastIndex(real, "/")]
	}
	dev, err := os.ReadFile(real + "/dev")
	if err != nil {
		return "", "", err
	}
	return "/dev/" + real[strings.LastIndex(real, "/")+1:], strings.TrimSpace(string(dev)), nil
}

// Owner names this process for a campaign record: "PID START", its pid and
// its start time in clock ticks since boot, so that a pid reused by another
// process is not mistaken for it.
func Owner() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + " " + startTime(pid)
}

// OwnerAlive reports whether the process an Owner string names still runs.
// An empty or malformed owner (a campaign recorded before owners were) is
// not known to be alive.
func OwnerAlive(owner string) bool {
	pidText, start, ok := strings.Cut(owner, " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	got := startTime(pid)
	return got != "" && got == start
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks after boot; "" when there is no such process.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	st, ok := parseStat(b)
	if !ok {
		return ""
	}
	return st.field(22)
}
