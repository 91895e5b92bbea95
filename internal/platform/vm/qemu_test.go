package vm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/vminit"
)

func TestArgsKVMAndTCG(t *testing.T) {
	m := machine{Name: "ctrbench-x", CPUs: 1.5, HostCPUs: 2, MemoryMB: 512, Kernel: "/boot/vmlinuz-6.1", Initramfs: "/i.cpio",
		Console: "/w/console.log", Tap: "ctbv1t2", MAC: macFor(2), Disk: "/w/disk.img",
		Init: vminit.Config{Args: []string{"agent", "run", "--workload", "cpu.primes", "--params", `{"duration": "1s"}`}, Address: "198.18.203.2/24"}}
	for accel, want := range map[string][]string{
		"kvm": {"-accel kvm", "-cpu host"},
		"tcg": {"-accel tcg,thread=multi", "-cpu max"},
	} {
		m.Accel = Accel{Name: accel}
		args, err := m.Args()
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(args, " ")
		for _, w := range append(want, "-smp 2", "-m 512", "-kernel /boot/vmlinuz-6.1", "-initrd /i.cpio", "-no-reboot",
			"-serial file:/w/console.log -serial stdio", "tap,id=n0,ifname=ctbv1t2,script=no,downscript=no",
			"virtio-net-pci,netdev=n0,mac=52:54:00:ce:cb:02", "file=/w/disk.img,if=virtio,format=raw") {
			if !strings.Contains(joined, w) {
				t.Errorf("%s: want %q in %s", accel, w, joined)
			}
		}
		// The agent's invocation survives the kernel command line.
		i := slices.Index(args, "-append")
		c, err := vminit.Decode(args[i+1])
		if err != nil || !slices.Equal(c.Args, m.Init.Args) || c.Address != m.Init.Address {
			t.Errorf("%s: the command line carries %+v (%v)", accel, c, err)
		}
		if !strings.HasSuffix(args[i+1], "rdinit=/ctrbench "+vminit.Param+"="+m.Init.Encode()+" -- agent vm") {
			t.Errorf("%s: command line %q", accel, args[i+1])
		}
	}
	// A tap the lab plugs in is QEMU's fd 3, not a name (it may be in
	// another namespace), and on OVS offers the guest no offload.
	m.Accel, m.TapFD, m.NoOffload = Accel{Name: "tcg"}, true, true
	if args, err := m.Args(); err != nil || !slices.Contains(args, "tap,id=n0,fd=3") ||
		!slices.Contains(args, "virtio-net-pci,netdev=n0,mac=52:54:00:ce:cb:02,csum=off,guest_csum=off") {
		t.Errorf("a plugged tap: %v %v", args, err)
	}
	m.TapFD, m.NoOffload = false, false
	m.Accel = Accel{Name: "hvf"}
	if _, err := m.Args(); err == nil {
		t.Error("an unknown accelerator was accepted")
	}
	m.Accel = Accel{Name: "tcg"}
	m.Init.Args = []string{strings.Repeat("x", 2000)}
	if _, err := m.Args(); err == nil || !strings.Contains(err.Error(), "command line") {
		t.Errorf("an over-long command line: %v", err)
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		cpus      float64
		host      int
		mem, want int64
		smp       int
	}{{0, 2, 0, defaultMemoryMB, 2}, {0.5, 2, 64, minMemoryMB, 1}, {1.5, 2, 2048, 2048, 2}, {3, 2, 0, defaultMemoryMB, 3}} {
		m := machine{CPUs: tc.cpus, HostCPUs: tc.host, MemoryMB: tc.mem}
		if m.smp() != tc.smp || m.memoryMB() != tc.want {
			t.Errorf("cpus %v memory %d: -smp %d -m %d, want %d %d", tc.cpus, tc.mem, m.smp(), m.memoryMB(), tc.smp, tc.want)
		}
	}
}

// TestDetectAccel: TCG without the CPU flags even where /dev/kvm exists
// (this project's machines), and the KVM path's device checks.
func TestDetectAccel(t *testing.T) {
	dir := t.TempDir()
	oldInfo, oldDev := cpuinfo, kvmDevice
	t.Cleanup(func() { cpuinfo, kvmDevice = oldInfo, oldDev })
	cpuinfo = filepath.Join(dir, "cpuinfo")
	os.WriteFile(cpuinfo, []byte("processor\t: 0\nflags\t\t: fpu sse2 hypervisor\n"), 0o644)
	if a := DetectAccel(); a.Name != "tcg" || !strings.Contains(a.Reason, "no vmx or svm") {
		t.Errorf("no flags: %+v", a)
	}
	os.WriteFile(cpuinfo, []byte("flags\t\t: fpu vmx sse2\n"), 0o644)
	kvmDevice = filepath.Join(dir, "kvm") // absent
	if a := DetectAccel(); a.Name != "tcg" || !strings.Contains(a.Reason, "kvm") {
		t.Errorf("flags but no device: %+v", a)
	}
	kvmDevice = cpuinfo // a file, not the device: its ioctls fail
	if a := DetectAccel(); a.Name != "tcg" || !strings.Contains(a.Reason, "API version") {
		t.Errorf("not the KVM device: %+v", a)
	}
	if !hasVirtFlag("flags : a svm b\n") || hasVirtFlag("flags : a vmxx\n") || hasVirtFlag("vmx flags : a\n") {
		t.Error("hasVirtFlag")
	}
}

func TestModuleOrder(t *testing.T) {
	dep := `kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/net/core/failover.ko:
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
`
	got, err := ModuleOrder(strings.NewReader(dep), map[string]bool{"virtio_blk": true}, []string{"virtio_pci", "virtio_net", "virtio_blk"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kernel/drivers/virtio/virtio_ring.ko", "kernel/drivers/virtio/virtio.ko", "kernel/drivers/virtio/virtio_pci_modern_dev.ko",
		"kernel/drivers/virtio/virtio_pci.ko", "kernel/net/core/failover.ko", "kernel/drivers/net/net_failover.ko", "kernel/drivers/net/virtio_net.ko"}
	if !slices.Equal(got, want) {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
	if _, err := ModuleOrder(strings.NewReader(dep), nil, []string{"virtio_blk"}); err == nil {
		t.Error("a module neither listed nor built in was accepted")
	}
}
