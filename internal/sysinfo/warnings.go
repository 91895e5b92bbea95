package sysinfo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Warning is a setting or condition of the machine known to add noise to
// benchmark numbers.
type Warning struct {
	Key   string // the fingerprint key
	Value string // what it says, readable
	Why   string // one sentence: why it adds noise, and how to fix it
}

// String is "KEY=VALUE adds noise: WHY".
func (w Warning) String() string {
	return fmt.Sprintf("%s=%s adds noise: %s", w.Key, w.Value, w.Why)
}

// Busy thresholds: a load average above this share of the CPUs (at least
// minLoad), a process using more than busyPct % of one CPU.
const (
	loadShare = 0.1
	minLoad   = 0.5
	busyPct   = 10
)

// Hygiene says what of a fingerprint (Fingerprint's, or a stored
// campaign's) is known to add noise, as pyperf's `system show` and Google
// Benchmark's "CPU scaling is enabled" do; nothing for a key it lacks.
func Hygiene(env map[string]string) []Warning {
	var out []Warning
	add := func(key, value, why string) {
		out = append(out, Warning{Key: key, Value: value, Why: why})
	}
	if g := env[result.EnvGovernor]; g != "" && g != "performance" {
		add(result.EnvGovernor, g, "the clock follows the load, so trials run at different speeds: cpupower frequency-set -g performance")
	}
	if env[result.EnvBoost] == "on" {
		fix := "echo 0 > /sys/devices/system/cpu/cpufreq/boost"
		if env[result.EnvFreqDriver] == "intel_pstate" {
			fix = "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
		}
		add(result.EnvBoost, "on", "turbo clocks depend on temperature and on how many cores are busy: "+fix)
	}
	if env[result.EnvSMT] == "on" {
		add(result.EnvSMT, "on", "a hyper-thread shares its core with whatever runs on its sibling: echo off > /sys/devices/system/cpu/smt/control")
	}
	if env[result.EnvTHP] == "always" {
		add(result.EnvTHP, "always", "huge-page faults and khugepaged's compaction vary from trial to trial: echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")
	}
	if v := env[result.EnvVirt]; v != "" && v != "none" {
		add(result.EnvVirt, v, "a virtual machine's CPUs are taken by the host and other guests at times (steal time): use bare metal or dedicated, pinned vCPUs")
	}
	if c := env[result.EnvContainer]; c != "" && c != "none" {
		add(result.EnvContainer, c, "ctrbench runs inside a container, under its limits and beside the host's other work: run it on the host")
	}
	if env[result.EnvHostCgroupVersion] == "1" {
		add(result.EnvHostCgroupVersion, "1", "cgroup v1 limits and accounts CPU, memory and I/O unlike v2, so results do not carry over: boot with systemd.unified_cgroup_hierarchy=1")
	}
	if env[result.EnvPower] == "battery" {
		add(result.EnvPower, "battery", "on battery the CPU saves power and slows down: plug the charger in")
	}
	if used, _ := strconv.ParseInt(env[result.EnvSwapUsed], 10, 64); used > 0 {
		add(result.EnvSwapUsed, mib(used), "swapped-out pages are slow to come back when touched: free memory, then swapoff -a && swapon -a")
	}
	out = append(out, loadWarnings(env)...)
	return out
}

// loadWarnings are Hygiene's of the load at start: the load average, the
// busiest processes.
func loadWarnings(env map[string]string) []Warning {
	var out []Warning
	cpus, _ := strconv.Atoi(env[result.EnvCPUCores])
	load, err := strconv.ParseFloat(env[result.EnvLoadAvg1], 64)
	if limit := max(minLoad, loadShare*float64(cpus)); err == nil && load > limit {
		value := env[result.EnvLoadAvg1]
		if cpus > 0 {
			value += fmt.Sprintf(" on %d CPUs", cpus)
		}
		out = append(out, Warning{Key: result.EnvLoadAvg1, Value: value,
			Why: "other work ran in the last minute and may still run: stop it or wait for it to end"})
	}
	var busy []string
	for _, p := range parseBusiest(env[result.EnvLoadBusiest]) {
		if p.pct > busyPct {
			busy = append(busy, fmt.Sprintf("%s %d %.0f%%", p.name, p.pid, p.pct))
		}
	}
	if len(busy) > 0 {
		out = append(out, Warning{Key: result.EnvLoadBusiest, Value: strings.Join(busy, ", "),
			Why: "another process used the CPU as the run started: stop it or wait for it to end"})
	}
	return out
}

// mib is a byte count in MiB, readable.
func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}
