package sysinfo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// root is the directory the machine's tuning is read under (proc/…,
// sys/…): "/" on a real machine; tests point it at a fake tree.
var root = "/"

// pause waits between the two samples of the processes' CPU times and
// returns how long it waited; tests replace it.
var pause = func() time.Duration {
	start := time.Now()
	time.Sleep(200 * time.Millisecond)
	return time.Since(start)
}

// machineTuning records in env what moves benchmark numbers besides the
// hardware (docs/machine-hygiene.md). A file that is missing leaves its
// key out.
func machineTuning(env map[string]string) {
	set := func(key, value string) {
		if value != "" {
			env[key] = value
		}
	}
	set(result.EnvGovernor, governor())
	set(result.EnvFreqDriver, readHost("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"))
	set(result.EnvBoost, boost())
	set(result.EnvSMT, smt())
	set(result.EnvCmdline, cmdline())
	summary, detail := mitigations()
	set(result.EnvMitigations, summary)
	set(result.EnvVulnerabilities, detail)
	set(result.EnvTHP, bracketed(readHost("sys/kernel/mm/transparent_hugepage/enabled")))
	total, used := swap()
	set(result.EnvSwap, total)
	set(result.EnvSwapUsed, used)
	set(result.EnvHostCgroupVersion, cgroupVersion())
	set(result.EnvVirt, hypervisor())
	set(result.EnvContainer, container())
	set(result.EnvPower, powerSupply())
	if f := strings.Fields(readHost("proc/loadavg")); len(f) > 0 {
		env[result.EnvLoadAvg1] = f[0]
	}
	set(result.EnvLoadBusiest, busiestNow())
}

// hostPath is path under root.
func hostPath(path string) string { return filepath.Join(root, path) }

// readHost is the trimmed content of path under root, "" when it cannot
// be read.
func readHost(path string) string {
	b, err := os.ReadFile(hostPath(path))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func existsHost(path string) bool {
	_, err := os.Stat(hostPath(path))
	return err == nil
}

// globHost are the paths under root (relative to it) matching pattern.
func globHost(pattern string) []string {
	m, _ := filepath.Glob(hostPath(pattern))
	out := make([]string, 0, len(m))
	for _, p := range m {
		rel, err := filepath.Rel(root, p)
		if err == nil {
			out = append(out, rel)
		}
	}
	return out
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// governor is every CPU's cpufreq governor: one name when they agree
// (as Google Benchmark, it checks them all), else the distinct names,
// sorted, comma-separated.
func governor() string {
	var names []string
	for _, p := range globHost("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor") {
		if g := readHost(p); g != "" && !slices.Contains(names, g) {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// boost is whether turbo/boost clocks are allowed: intel_pstate's
// no_turbo, else cpufreq's global boost, else any policy's (amd-pstate).
func boost() string {
	if v := readHost("sys/devices/system/cpu/intel_pstate/no_turbo"); v != "" {
		return onOff(v == "0")
	}
	if v := readHost("sys/devices/system/cpu/cpufreq/boost"); v != "" {
		return onOff(v == "1")
	}
	policies := globHost("sys/devices/system/cpu/cpufreq/policy*/boost")
	if len(policies) == 0 {
		return ""
	}
	return onOff(slices.ContainsFunc(policies, func(p string) bool { return readHost(p) == "1" }))
}

// smt is whether sibling hardware threads run: smt/active, or on kernels
// without it, whether cpu0 has a sibling.
func smt() string {
	if c := readHost("sys/devices/system/cpu/smt/control"); c == "notsupported" || c == "notimplemented" {
		return "notsupported"
	}
	if a := readHost("sys/devices/system/cpu/smt/active"); a != "" {
		return onOff(a == "1")
	}
	if s := readHost("sys/devices/system/cpu/cpu0/topology/thread_siblings_list"); s != "" {
		return onOff(strings.ContainsAny(s, ",-"))
	}
	return ""
}

// cmdline is the kernel's parameters: /proc/cmdline up to "--", after
// which come init's arguments, not the kernel's settings.
func cmdline() string {
	c := readHost("proc/cmdline")
	if c == "--" || strings.HasPrefix(c, "-- ") {
		return ""
	}
	c, _, _ = strings.Cut(c, " -- ")
	return strings.TrimSpace(c)
}

// mitigations reads /sys/devices/system/cpu/vulnerabilities: a count of
// each state, and the vulnerabilities the CPU is not immune to with the
// kernel's text for each.
func mitigations() (summary, detail string) {
	files := globHost("sys/devices/system/cpu/vulnerabilities/*")
	if len(files) == 0 {
		return "", ""
	}
	slices.Sort(files)
	var mitigated, vulnerable, unaffected, unknown int
	var listed []string
	for _, f := range files {
		text := readHost(f)
		state, _ := strings.CutPrefix(text, "KVM: ")
		switch {
		case strings.HasPrefix(state, "Not affected"):
			unaffected++
			continue
		case strings.HasPrefix(state, "Mitigation"):
			mitigated++
		case strings.HasPrefix(state, "Vulnerable"), strings.HasPrefix(state, "Processor vulnerable"):
			vulnerable++
		default:
			unknown++
		}
		listed = append(listed, filepath.Base(f)+": "+text)
	}
	summary = fmt.Sprintf("%d mitigated, %d vulnerable, %d not affected", mitigated, vulnerable, unaffected)
	if unknown > 0 {
		summary += fmt.Sprintf(", %d unknown", unknown)
	}
	// " | ": the kernel's texts hold semicolons.
	return summary, strings.Join(listed, " | ")
}

// bracketed is the selected value of a sysfs choice, "always [madvise]
// never" → "madvise"; "" when none is.
func bracketed(s string) string {
	_, after, ok := strings.Cut(s, "[")
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(after, "]")
	if !ok {
		return ""
	}
	return v
}

// swap is SwapTotal and SwapTotal-SwapFree of /proc/meminfo, in bytes.
func swap() (total, used string) {
	kb := map[string]int64{}
	for _, line := range strings.Split(readHost("proc/meminfo"), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) > 0 {
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err == nil {
				kb[k] = n
			}
		}
	}
	t, okT := kb["SwapTotal"]
	f, okF := kb["SwapFree"]
	if !okT {
		return "", ""
	}
	total = strconv.FormatInt(t*1024, 10)
	if okF {
		used = strconv.FormatInt((t-f)*1024, 10)
	}
	return total, used
}

// cgroupVersion is the host's cgroup hierarchy: "2" when unified, "1"
// when /sys/fs/cgroup holds v1 controllers (a hybrid one too).
func cgroupVersion() string {
	if existsHost("sys/fs/cgroup/cgroup.controllers") {
		return "2"
	}
	if entries, err := os.ReadDir(hostPath("sys/fs/cgroup")); err == nil && len(entries) > 0 {
		return "1"
	}
	return ""
}

// powerSupply is "battery" when the machine has a battery and no charger
// online, "ac" when it has one online; "" without a battery (a server).
func powerSupply() string {
	battery, mains := false, false
	for _, d := range globHost("sys/class/power_supply/*") {
		switch readHost(d + "/type") {
		case "Battery":
			// A mouse's or a keyboard's battery has scope Device.
			battery = battery || readHost(d+"/scope") != "Device"
		case "Mains", "USB":
			mains = mains || readHost(d+"/online") == "1"
		}
	}
	switch {
	case !battery:
		return ""
	case mains:
		return "ac"
	}
	return "battery"
}

// detectVirt asks systemd-detect-virt (its flag: --vm or --container),
// only on the real machine; "" when it is not installed or says nothing.
func detectVirt(flag string) string {
	if root != "/" {
		return ""
	}
	path, err := exec.LookPath("systemd-detect-virt")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// It exits 1 when it prints "none".
	out, _ := exec.CommandContext(ctx, path, flag).Output()
	v := strings.TrimSpace(string(out))
	if v == "" || strings.ContainsAny(v, " \n") {
		return ""
	}
	return v
}
