package sysinfo

import (
	"strings"
)

// dmiVendors name hypervisors by the prefix of a DMI field, as
// systemd-detect-virt does.
var dmiVendors = []struct{ prefix, name string }{
	{"KVM", "kvm"}, {"OpenStack", "kvm"}, {"KubeVirt", "kvm"},
	{"Amazon EC2", "amazon"}, {"Google Compute Engine", "google"},
	{"QEMU", "qemu"}, {"Bochs", "bochs"},
	{"VMware", "vmware"}, {"VMW", "vmware"},
	{"innotek GmbH", "oracle"}, {"VirtualBox", "oracle"},
	{"Xen", "xen"}, {"Parallels", "parallels"}, {"BHYVE", "bhyve"},
	{"Hyper-V", "microsoft"}, {"Apple Virtualization", "apple"},
}

// gvisorVersion is the fixed /proc/version of gVisor's kernel.
const gvisorVersion = "#1 SMP Sun Jan 10 15:06:54 PST 2016"

// hypervisor names the hypervisor ctrbench runs under, "none" on bare
// metal: from DMI, the clock sources the kernel offers, /sys/hypervisor,
// the kernel's release (WSL) and version (gVisor), and, when these find
// none or only /proc/cpuinfo's "hypervisor" flag, systemd-detect-virt
// --vm; "vm" when only the flag tells.
func hypervisor() string {
	dmi := dmiVirt()
	if dmi != "" && dmi != "qemu" && dmi != "bochs" {
		return dmi
	}
	// QEMU with KVM acceleration says QEMU in DMI and offers kvm-clock.
	clocks := readHost("sys/devices/system/clocksource/clocksource0/available_clocksource")
	for _, c := range []struct{ clock, name string }{{"kvm-clock", "kvm"}, {"hyperv", "microsoft"}, {"xen", "xen"}} {
		if strings.Contains(clocks, c.clock) {
			return c.name
		}
	}
	if dmi != "" {
		return dmi
	}
	if t := readHost("sys/hypervisor/type"); t != "" {
		return t
	}
	if rel := strings.ToLower(readHost("proc/sys/kernel/osrelease")); strings.Contains(rel, "microsoft") || strings.Contains(rel, "wsl") {
		return "wsl"
	}
	if strings.Contains(readHost("proc/version"), gvisorVersion) {
		return "gvisor"
	}
	if v := detectVirt("--vm"); v != "" {
		return v
	}
	if cpuFlag("hypervisor") {
		return "vm"
	}
	return "none"
}

// dmiVirt is the hypervisor DMI names, "" for none.
func dmiVirt() string {
	dir := "sys/class/dmi/id/"
	vendor, product := readHost(dir+"sys_vendor"), readHost(dir+"product_name")
	if vendor == "Microsoft Corporation" && product == "Virtual Machine" {
		return "microsoft"
	}
	for _, field := range []string{product, vendor, readHost(dir + "board_vendor"), readHost(dir + "bios_vendor")} {
		for _, v := range dmiVendors {
			if field == "" || !strings.HasPrefix(field, v.prefix) {
				continue
			}
			// A cloud's bare-metal machines (Amazon's *.metal) keep its
			// DMI names but run no hypervisor.
			if (v.name == "amazon" || v.name == "google") && cpuFlags() != "" && !cpuFlag("hypervisor") {
				return ""
			}
			return v.name
		}
	}
	return ""
}

// cpuFlags is the flags line of /proc/cpuinfo (x86's), "" without one.
func cpuFlags() string {
	for _, line := range strings.Split(readHost("proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			return " " + strings.TrimSpace(v) + " "
		}
	}
	return ""
}

func cpuFlag(flag string) bool { return strings.Contains(cpuFlags(), " "+flag+" ") }

// container names the container ctrbench runs in, "none" on the host:
// podman's and Docker's marker files, systemd's note, pid 1's container=
// variable (lxc, systemd-nspawn), then systemd-detect-virt --container.
func container() string {
	switch {
	case existsHost("run/.containerenv"):
		return "podman"
	case existsHost(".dockerenv"):
		return "docker"
	}
	if c := readHost("run/systemd/container"); c != "" {
		return c
	}
	for _, kv := range strings.Split(readHost("proc/1/environ"), "\x00") {
		if v, ok := strings.CutPrefix(kv, "container="); ok && v != "" {
			return v
		}
	}
	if v := detectVirt("--container"); v != "" {
		return v
	}
	return "none"
}
