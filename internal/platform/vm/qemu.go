package vm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/vminit"
)

// Accel is how QEMU runs the guest's instructions.
type Accel struct {
	Name   string // "kvm" or "tcg"
	Reason string // why not KVM, when TCG
}

// KVM ioctls (linux/kvm.h): _IO(0xAE, 0x00) and _IO(0xAE, 0x01).
const (
	kvmGetAPIVersion = 0xAE00
	kvmCreateVM      = 0xAE01
	kvmAPIVersion    = 12
)

// kvmDevice is the device KVM is reached through; cpuinfo says what the
// CPU has.
var (
	kvmDevice = "/dev/kvm"
	cpuinfo   = "/proc/cpuinfo"
)

// DetectAccel uses KVM where it really works — the CPU has virtualisation
// extensions (vmx or svm), and /dev/kvm opens, speaks API version 12 and
// creates a virtual machine — and TCG, QEMU's emulation, otherwise, saying
// why. The CPU flags come first: on this project's machines /dev/kvm
// exists and even creates a machine, yet QEMU then aborts setting up the
// virtual CPU ("failed to set MSR").
func DetectAccel() Accel {
	if b, err := os.ReadFile(cpuinfo); err != nil || !hasVirtFlag(string(b)) {
		return Accel{Name: "tcg", Reason: "the CPU has no virtualisation extensions (no vmx or svm in " + cpuinfo + ")"}
	}
	f, err := os.OpenFile(kvmDevice, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return Accel{Name: "tcg", Reason: fmt.Sprintf("%s: %v", kvmDevice, err)}
	}
	defer f.Close()
	v, err := unix.IoctlRetInt(int(f.Fd()), kvmGetAPIVersion)
	if err != nil || v != kvmAPIVersion {
		return Accel{Name: "tcg", Reason: fmt.Sprintf("%s: API version %d (%v), want %d", kvmDevice, v, err, kvmAPIVersion)}
	}
	fd, err := unix.IoctlRetInt(int(f.Fd()), kvmCreateVM)
	if err != nil {
		return Accel{Name: "tcg", Reason: fmt.Sprintf("%s cannot create a virtual machine (%v): the CPU lacks virtualisation extensions or they are off", kvmDevice, err)}
	}
	unix.Close(fd)
	return Accel{Name: "kvm"}
}

// hasVirtFlag reports whether a cpuinfo's flags include vmx or svm.
func hasVirtFlag(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, f := range strings.Fields(v) {
			if f == "vmx" || f == "svm" {
				return true
			}
		}
	}
	return false
}

// machine is one virtual machine as QEMU starts it.
type machine struct {
	Name      string
	Accel     Accel
	CPUs      float64 // the cpus limit; 0: HostCPUs
	HostCPUs  int
	MemoryMB  int64 // the memory limit; 0: defaultMemoryMB
	Kernel    string
	Initramfs string
	Console   string // file the first serial port (the console) writes to
	Tap       string // the NIC's tap; "" without a NIC
	// TapFD: QEMU is given the tap as its file descriptor 3 (a tap the lab
	// plugs in may move to another namespace, where its name is unknown).
	TapFD bool
	MAC   string
	// NoOffload: the NIC offers the guest no checksum offload (so no
	// segmentation offload either): every frame leaves with its checksum
	// computed, as a switch that computes none (OVS's userspace datapath)
	// needs.
	NoOffload bool
	Disk      string // the data disk's image; "" without one
	// Drives are more disk images, read-only, after Disk (vdb, vdc…).
	Drives []string
	Init   vminit.Config
}

// defaultMemoryMB is a machine's memory without a memory limit.
const defaultMemoryMB = 1024

// minMemoryMB is the least a machine boots with (the kernel and the
// initramfs, unpacked, live in it).
const minMemoryMB = 256

// smp is the number of virtual CPUs: the cpus limit rounded up (a
// machine has whole CPUs), the host's count without one.
func (m machine) smp() int {
	if m.CPUs > 0 {
		return int(math.Ceil(m.CPUs))
	}
	if m.HostCPUs > 0 {
		return m.HostCPUs
	}
	return 1
}

func (m machine) memoryMB() int64 {
	switch {
	case m.MemoryMB == 0:
		return defaultMemoryMB
	case m.MemoryMB < minMemoryMB:
		return minMemoryMB
	}
	return m.MemoryMB
}

// maxCmdline is the x86 kernel's command-line limit (COMMAND_LINE_SIZE).
const maxCmdline = 2048

// offload is the NIC's offload properties: none with NoOffload.
func (m machine) offload() string {
	if m.NoOffload {
		return ",csum=off,guest_csum=off"
	}
	return ""
}

// Args are QEMU's arguments for the machine: no default devices, no
// display, no reboot (the guest's power-off ends QEMU); the kernel and
// initramfs booted directly with ctrbench as init; the console on the
// first serial port (a file), the agent's output and control on the second
// (QEMU's standard streams); a virtio NIC on a tap and a virtio disk.
func (m machine) Args() ([]string, error) {
	cmdline := "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/ctrbench " + vminit.Param + "=" + m.Init.Encode() + " -- agent vm"
	if len(cmdline) >= maxCmdline {
		return nil, fmt.Errorf("the kernel command line would be %d bytes, over the kernel's %d: the agent's parameters are too long for a virtual machine", len(cmdline), maxCmdline)
	}
	args := []string{"-name", m.Name, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-monitor", "none"}
	switch m.Accel.Name {
	case "kvm":
		args = append(args, "-accel", "kvm", "-cpu", "host")
	case "tcg":
		// Multi-threaded TCG: one host thread per virtual CPU.
		args = append(args, "-accel", "tcg,thread=multi", "-cpu", "max")
	default:
		return nil, fmt.Errorf("accelerator %q: want kvm or tcg", m.Accel.Name)
	}
	args = append(args, "-smp", strconv.Itoa(m.smp()), "-m", strconv.FormatInt(m.memoryMB(), 10),
		"-kernel", m.Kernel, "-initrd", m.Initramfs, "-append", cmdline,
		"-serial", "file:"+m.Console, "-serial", "stdio")
	if m.Tap != "" {
		tap := "ifname=" + m.Tap + ",script=no,downscript=no"
		if m.TapFD {
			tap = "fd=3"
		}
		args = append(args, "-netdev", "tap,id=n0,"+tap,
			"-device", "virtio-net-pci,netdev=n0,mac="+m.MAC+m.offload())
	}
	if m.Disk != "" {
		if strings.ContainsAny(m.Disk, ",") {
			return nil, errors.New("disk image path has a comma")
		}
		args = append(args, "-drive", "file="+m.Disk+",if=virtio,format=raw,cache=none,aio=threads")
	}
	for _, d := range m.Drives {
		if strings.ContainsAny(d, ",") {
			return nil, errors.New("disk image path has a comma")
		}
		args = append(args, "-drive", "file="+d+",if=virtio,format=raw,readonly=on,cache=none,aio=threads")
	}
	return args, nil
}
