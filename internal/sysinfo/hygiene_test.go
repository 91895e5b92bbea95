package sysinfo

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
)

// fakeRoot writes files (path under the root → content) into a temporary
// tree and reads the machine's tuning from it for the test's duration.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	oldRoot, oldPause := root, pause
	root = dir
	pause = func() time.Duration { return time.Second }
	t.Cleanup(func() { root, pause = oldRoot, oldPause })
	return dir
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// statLine is a /proc/PID/stat line with utime and stime.
func statLine(pid int, name string, utime, stime int) string {
	return strconv.Itoa(pid) + " (" + name + ") S 1 1 1 0 -1 4194560 100 0 0 0 " +
		strconv.Itoa(utime) + " " + strconv.Itoa(stime) + " 0 0 20 0 1 0 42 1000 10 18446744073709551615\n"
}

const cpuDir = "sys/devices/system/cpu/"

// A machine with every noisy setting: each key is read, and Hygiene warns
// of each.
func TestMachineTuningNoisy(t *testing.T) {
	self := os.Getpid()
	dir := fakeRoot(t, map[string]string{
		cpuDir + "cpu0/cpufreq/scaling_governor":                            "powersave\n",
		cpuDir + "cpu1/cpufreq/scaling_governor":                            "performance\n",
		cpuDir + "cpu0/cpufreq/scaling_driver":                              "intel_pstate\n",
		cpuDir + "intel_pstate/no_turbo":                                    "0\n",
		cpuDir + "smt/control":                                              "on\n",
		cpuDir + "smt/active":                                               "1\n",
		cpuDir + "vulnerabilities/meltdown":                                 "Not affected\n",
		cpuDir + "vulnerabilities/spectre_v2":                               "Mitigation: Retpolines; STIBP: disabled\n",
		cpuDir + "vulnerabilities/mds":                                      "Vulnerable: Clear CPU buffers attempted, no microcode; SMT vulnerable\n",
		cpuDir + "vulnerabilities/itlb_multihit":                            "KVM: Mitigation: VMX disabled\n",
		cpuDir + "vulnerabilities/new_one":                                  "Unknown: No mitigations\n",
		"proc/cmdline":                                                      "BOOT_IMAGE=/vmlinuz root=/dev/sda1 mitigations=auto -- --init-flag secret\n",
		"sys/kernel/mm/transparent_hugepage/enabled":                        "[always] madvise never\n",
		"proc/meminfo":                                                      "MemTotal: 16000000 kB\nSwapTotal:       2048 kB\nSwapFree:        1024 kB\n",
		"sys/fs/cgroup/cpu/tasks":                                           "",
		"sys/class/dmi/id/sys_vendor":                                       "QEMU\n",
		"sys/class/dmi/id/product_name":                                     "Standard PC (Q35 + ICH9, 2009)\n",
		"sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock tsc acpi_pm\n",
		".dockerenv":                           "",
		"sys/class/power_supply/BAT0/type":     "Battery\n",
		"sys/class/power_supply/AC/type":       "Mains\n",
		"sys/class/power_supply/AC/online":     "0\n",
		"proc/loadavg":                         "3.50 2.00 1.00 2/300 1234\n",
		"proc/100/stat":                        statLine(100, "dockerd", 1000, 500),
		"proc/200/stat":                        statLine(200, "my, app", 10, 0),
		"proc/300/stat":                        statLine(300, "idle", 7, 0),
		"proc/" + strconv.Itoa(self) + "/stat": statLine(self, "ctrbench", 0, 0),
	})
	pause = func() time.Duration {
		writeTree(t, dir, map[string]string{
			"proc/100/stat":                        statLine(100, "dockerd", 1040, 510),
			"proc/200/stat":                        statLine(200, "my, app", 15, 0),
			"proc/300/stat":                        statLine(300, "idle", 7, 0),
			"proc/" + strconv.Itoa(self) + "/stat": statLine(self, "ctrbench", 90, 0),
		})
		return time.Second
	}
	env := map[string]string{result.EnvCPUCores: "8"}
	machineTuning(env)
	want := map[string]string{
		result.EnvCPUCores:          "8",
		result.EnvGovernor:          "performance,powersave",
		result.EnvFreqDriver:        "intel_pstate",
		result.EnvBoost:             "on",
		result.EnvSMT:               "on",
		result.EnvCmdline:           "BOOT_IMAGE=/vmlinuz root=/dev/sda1 mitigations=auto",
		result.EnvMitigations:       "2 mitigated, 1 vulnerable, 1 not affected, 1 unknown",
		result.EnvVulnerabilities:   "itlb_multihit: KVM: Mitigation: VMX disabled | mds: Vulnerable: Clear CPU buffers attempted, no microcode; SMT vulnerable | new_one: Unknown: No mitigations | spectre_v2: Mitigation: Retpolines; STIBP: disabled",
		result.EnvTHP:               "always",
		result.EnvSwap:              "2097152",
		result.EnvSwapUsed:          "1048576",
		result.EnvHostCgroupVersion: "1",
		result.EnvVirt:              "kvm",
		result.EnvContainer:         "docker",
		result.EnvPower:             "battery",
		result.EnvLoadAvg1:          "3.50",
		result.EnvLoadBusiest:       "dockerd 100 50%, my_ app 200 5%",
	}
	checkEnv(t, env, want)
	var keys []string
	for _, w := range Hygiene(env) {
		keys = append(keys, w.Key)
		if w.Why == "" || strings.Contains(w.Why, "\n") {
			t.Errorf("%s: Why %q", w.Key, w.Why)
		}
	}
	wantKeys := []string{result.EnvGovernor, result.EnvBoost, result.EnvSMT, result.EnvTHP, result.EnvVirt, result.EnvContainer,
		result.EnvHostCgroupVersion, result.EnvPower, result.EnvSwapUsed, result.EnvLoadAvg1, result.EnvLoadBusiest}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("warnings of %v, want %v", keys, wantKeys)
	}
	ws := Hygiene(env)
	if s := ws[1].String(); !strings.Contains(s, "cpu.boost=on adds noise: ") || !strings.Contains(s, "intel_pstate/no_turbo") {
		t.Errorf("boost warning %q", s)
	}
	if v := ws[len(ws)-1].Value; v != "dockerd 100 50%" {
		t.Errorf("busy processes %q, want only dockerd's", v)
	}
	if v := ws[len(ws)-2].Value; v != "3.50 on 8 CPUs" {
		t.Errorf("load %q", v)
	}
}

// A tuned machine: its keys are read, and Hygiene has nothing to say.
func TestMachineTuningTuned(t *testing.T) {
	fakeRoot(t, map[string]string{
		cpuDir + "cpu0/cpufreq/scaling_governor":     "performance\n",
		cpuDir + "cpu1/cpufreq/scaling_governor":     "performance\n",
		cpuDir + "cpu0/cpufreq/scaling_driver":       "acpi-cpufreq\n",
		cpuDir + "cpufreq/boost":                     "0\n",
		cpuDir + "smt/control":                       "off\n",
		cpuDir + "smt/active":                        "0\n",
		cpuDir + "vulnerabilities/meltdown":          "Not affected\n",
		"proc/cmdline":                               "root=/dev/nvme0n1p2 isolcpus=2-7\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
		"proc/meminfo":                               "SwapTotal: 0 kB\nSwapFree: 0 kB\n",
		"sys/fs/cgroup/cgroup.controllers":           "cpu io memory pids\n",
		"sys/class/dmi/id/sys_vendor":                "Dell Inc.\n",
		"proc/cpuinfo":                               "processor\t: 0\nflags\t\t: fpu vme sse sse2 avx\n",
		"proc/loadavg":                               "0.05 0.10 0.20 1/200 99\n",
		"proc/100/stat":                              statLine(100, "sshd", 10, 1),
	})
	env := map[string]string{result.EnvCPUCores: "8"}
	machineTuning(env)
	checkEnv(t, env, map[string]string{
		result.EnvCPUCores: "8", result.EnvGovernor: "performance", result.EnvFreqDriver: "acpi-cpufreq",
		result.EnvBoost: "off", result.EnvSMT: "off", result.EnvCmdline: "root=/dev/nvme0n1p2 isolcpus=2-7",
		result.EnvMitigations: "0 mitigated, 0 vulnerable, 1 not affected", result.EnvTHP: "never",
		result.EnvSwap: "0", result.EnvSwapUsed: "0", result.EnvHostCgroupVersion: "2",
		result.EnvVirt: "none", result.EnvContainer: "none", result.EnvLoadAvg1: "0.05", result.EnvLoadBusiest: "none",
	})
	if w := Hygiene(env); len(w) != 0 {
		t.Errorf("a tuned machine: %v", w)
	}
}

// Missing files leave their keys out; there is nothing to warn of.
func TestMachineTuningMissingFiles(t *testing.T) {
	fakeRoot(t, nil)
	env := map[string]string{}
	machineTuning(env)
	checkEnv(t, env, map[string]string{result.EnvVirt: "none", result.EnvContainer: "none"})
	if w := Hygiene(map[string]string{}); len(w) != 0 {
		t.Errorf("no fingerprint: %v", w)
	}
}

func checkEnv(t *testing.T, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s = %q, want %q", k, got[k], want[k])
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %q", k, v)
		}
	}
}

func TestHypervisor(t *testing.T) {
	const dmi, flagged = "sys/class/dmi/id/", "flags\t: fpu hypervisor sse\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"vmware", map[string]string{dmi + "sys_vendor": "VMware, Inc.\n", dmi + "product_name": "VMware Virtual Platform"}, "vmware"},
		{"hyper-v", map[string]string{dmi + "sys_vendor": "Microsoft Corporation", dmi + "product_name": "Virtual Machine"}, "microsoft"},
		{"surface laptop", map[string]string{dmi + "sys_vendor": "Microsoft Corporation", dmi + "product_name": "Surface Laptop 5"}, "none"},
		{"virtualbox with kvm-clock", map[string]string{dmi + "product_name": "VirtualBox",
			"sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock tsc"}, "oracle"},
		{"tcg qemu", map[string]string{dmi + "sys_vendor": "QEMU"}, "qemu"},
		{"ec2", map[string]string{dmi + "sys_vendor": "Amazon EC2", "proc/cpuinfo": flagged}, "amazon"},
		{"ec2 metal", map[string]string{dmi + "sys_vendor": "Amazon EC2", "proc/cpuinfo": "flags\t: fpu sse\n"}, "none"},
		{"hyper-v clock", map[string]string{"sys/devices/system/clocksource/clocksource0/available_clocksource": "hyperv_clocksource_tsc_page acpi_pm"}, "microsoft"},
		{"xen", map[string]string{"sys/hypervisor/type": "xen\n"}, "xen"},
		{"wsl", map[string]string{"proc/sys/kernel/osrelease": "5.15.153.1-microsoft-standard-WSL2\n"}, "wsl"},
		{"gvisor", map[string]string{"proc/version": "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n"}, "gvisor"},
		{"flag only", map[string]string{"proc/cpuinfo": flagged}, "vm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeRoot(t, c.files)
			if got := hypervisor(); got != c.want {
				t.Errorf("hypervisor() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestContainer(t *testing.T) {
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"run/.containerenv": "", ".dockerenv": ""}, "podman"},
		{map[string]string{"run/systemd/container": "lxc\n"}, "lxc"},
		{map[string]string{"proc/1/environ": "PATH=/bin\x00container=systemd-nspawn\x00"}, "systemd-nspawn"},
		{map[string]string{"proc/1/environ": "PATH=/bin\x00"}, "none"},
	} {
		fakeRoot(t, c.files)
		if got := container(); got != c.want {
			t.Errorf("container() with %v = %q, want %q", slices.Sorted(maps.Keys(c.files)), got, c.want)
		}
	}
}

func TestBoostAndSMTFallbacks(t *testing.T) {
	for _, c := range []struct {
		files      map[string]string
		boost, smt string
	}{
		{map[string]string{cpuDir + "cpufreq/boost": "1", cpuDir + "smt/control": "notsupported", cpuDir + "smt/active": "0"}, "on", "notsupported"},
		{map[string]string{cpuDir + "cpufreq/policy0/boost": "0", cpuDir + "cpufreq/policy1/boost": "1",
			cpuDir + "cpu0/topology/thread_siblings_list": "0,16"}, "on", "on"},
		{map[string]string{cpuDir + "cpufreq/policy0/boost": "0", cpuDir + "cpu0/topology/thread_siblings_list": "0"}, "off", "off"},
		{map[string]string{cpuDir + "cpu0/topology/thread_siblings_list": "0-1"}, "", "on"},
	} {
		fakeRoot(t, c.files)
		if b, s := boost(), smt(); b != c.boost || s != c.smt {
			t.Errorf("%v: boost %q, smt %q; want %q, %q", slices.Sorted(maps.Keys(c.files)), b, s, c.boost, c.smt)
		}
	}
}

func TestCmdline(t *testing.T) {
	for in, want := range map[string]string{
		"quiet splash\n":       "quiet splash",
		"quiet -- init args\n": "quiet",
		"-- only init\n":       "",
	} {
		fakeRoot(t, map[string]string{"proc/cmdline": in})
		if got := cmdline(); got != want {
			t.Errorf("cmdline %q → %q, want %q", in, got, want)
		}
	}
}

// The busiest processes, ourselves aside, and back.
func TestBusiest(t *testing.T) {
	before := map[int]procTime{1: {"systemd", 10}, 2: {"a b", 0}, 3: {"c", 0}, 4: {"d", 0}, 5: {"e", 0}, 9: {"self", 0}}
	after := map[int]procTime{1: {"systemd", 10}, 2: {"a b", 30}, 3: {"c", 250}, 4: {"d", 6}, 5: {"e", 5}, 9: {"self", 900}, 7: {"new", 50}}
	got := busiest(before, after, 2*time.Second, 9)
	if want := "c 3 125%, a b 2 15%, d 4 3%"; got != want {
		t.Errorf("busiest = %q, want %q", got, want)
	}
	p := parseBusiest(got)
	if len(p) != 3 || p[1] != (busyProcess{"a b", 2, 15}) {
		t.Errorf("parseBusiest(%q) = %+v", got, p)
	}
	if got := busiest(before, before, time.Second, 9); got != "none" {
		t.Errorf("an idle machine: %q", got)
	}
}

// The load average warns above a tenth of the CPUs, and at least 0.5.
func TestLoadWarning(t *testing.T) {
	for _, c := range []struct {
		load, cpus string
		warn       bool
	}{{"0.7", "8", false}, {"0.9", "8", true}, {"0.4", "2", false}, {"0.6", "2", true}, {"0.6", "", true}, {"", "8", false}} {
		w := Hygiene(map[string]string{result.EnvLoadAvg1: c.load, result.EnvCPUCores: c.cpus})
		if (len(w) == 1) != c.warn {
			t.Errorf("load %s on %s CPUs: %v", c.load, c.cpus, w)
		}
	}
}

// The real machine's: whatever it is, the load is read.
func TestFingerprintTuning(t *testing.T) {
	env := Fingerprint(nil)
	if _, err := os.Stat("/proc/loadavg"); err == nil && env[result.EnvLoadAvg1] == "" {
		t.Errorf("no load average in %v", env)
	}
	if env[result.EnvVirt] == "" || env[result.EnvContainer] == "" {
		t.Errorf("virt %q, container %q", env[result.EnvVirt], env[result.EnvContainer])
	}
}
