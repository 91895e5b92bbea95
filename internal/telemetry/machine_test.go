package telemetry

import (
	"os"
	"path/filepath"
	"testing"
)

func table(t *testing.T, name string) CPUTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := ParseCPUTable(string(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tab
}

// sample is what Read would record from the two files.
func sample(t *testing.T, softirqs, irqs string) Sample {
	t.Helper()
	s := Sample{}
	machineSample(table(t, softirqs), table(t, irqs), s)
	return s
}

// The files as captured from a 2-CPU VM (kernel 6.18): softirqs by name,
// numbered and named interrupt rows, ERR and MIS (one total) left out.
func TestParseCaptured(t *testing.T) {
	soft := table(t, "softirqs.2cpu.txt")
	if soft["NET_RX"][0] != 102462854 || soft["NET_RX"][1] != 97386154 || soft["NET_TX"][1] != 77349 || len(soft) != 10 {
		t.Errorf("softirqs: %v", soft)
	}
	irq := table(t, "interrupts.2cpu.txt")
	if irq["LOC"][0] != 33693886 || irq["36"][1] != 5336591 || irq["RES"][1] != 4468835 {
		t.Errorf("interrupts: %v", irq)
	}
	for _, row := range []string{"ERR", "MIS"} {
		if _, ok := irq[row]; ok {
			t.Errorf("%s parsed as a per-CPU row: %v", row, irq[row])
		}
	}
	s := sample(t, "softirqs.2cpu.txt", "interrupts.2cpu.txt")
	if s["softirq_net_rx/cpu0"] != 102462854 || s["interrupts_local_timer/cpu1"] != 33271717 {
		t.Errorf("sample %v", s)
	}
	// CPU1's interrupts but LOC: IRQs 25 26 31 35 36 38 42, IWI, RES, CAL, TLB, HYP.
	if want := float64(1 + 13 + 5096 + 1 + 5336591 + 7674 + 41154 + 1 + 4468835 + 13861890 + 2861491 + 43); s["interrupts/cpu1"] != want {
		t.Errorf("interrupts on CPU1 %v, want %v", s["interrupts/cpu1"], want)
	}
}

// Two readings of a 4-CPU machine: totals over the CPUs, the busiest CPU's
// NET_RX, and interrupts without LOC (counted apart), ERR or MIS.
func TestMachineDiff(t *testing.T) {
	got := Diff(sample(t, "softirqs.4cpu.before.txt", "interrupts.4cpu.before.txt"), sample(t, "softirqs.4cpu.after.txt", "interrupts.4cpu.after.txt"))
	want := map[string]float64{
		"softirq_net_rx": 100 + 6000 + 50, "softirq_net_rx_max_cpu": 6000, "softirq_net_tx": 1 + 5, "softirq_net": 6156,
		"interrupts": 500 + 300 + 4*10, "interrupts_local_timer": 4 * 1000,
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// CPU 2 went offline between the readings: /proc/interrupts lists the
// others by their numbers (the header, not the column's position), and the
// interrupts' total is left out — CPU 2's count over the window is
// unknown — while softirqs (every possible CPU) are still reported.
func TestMachineHotplug(t *testing.T) {
	off := table(t, "interrupts.4cpu.cpu2off.txt")
	if off["LOC"][3] != 52003 || off["RES"][3] != 420 {
		t.Fatalf("CPU3's column: %v", off)
	}
	if _, ok := off["LOC"][2]; ok {
		t.Errorf("an offline CPU has a count: %v", off["LOC"])
	}
	got := Diff(sample(t, "softirqs.4cpu.before.txt", "interrupts.4cpu.after.txt"), sample(t, "softirqs.4cpu.after.txt", "interrupts.4cpu.cpu2off.txt"))
	for _, k := range []string{"interrupts", "interrupts_local_timer"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %v across a CPU going offline", k, v)
		}
	}
	if got["softirq_net_rx"] != 6150 {
		t.Errorf("softirqs lost with the interrupts: %v", got)
	}
}

// A per-CPU count that went backwards (the kernel's 32-bit counters wrap)
// gives no value, never a negative or a total without that CPU.
func TestMachineDecrease(t *testing.T) {
	start := Sample{"softirq_net_rx/cpu0": 4294967290, "softirq_net_rx/cpu1": 10, "softirq_net_tx/cpu0": 1, "softirq_net_tx/cpu1": 1}
	end := Sample{"softirq_net_rx/cpu0": 5, "softirq_net_rx/cpu1": 20, "softirq_net_tx/cpu0": 3, "softirq_net_tx/cpu1": 1}
	got := Diff(start, end)
	for _, k := range []string{"softirq_net_rx", "softirq_net_rx_max_cpu", "softirq_net"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %v after a wrap", k, v)
		}
	}
	if got["softirq_net_tx"] != 2 {
		t.Errorf("softirq_net_tx %v, want 2", got["softirq_net_tx"])
	}
	if d, ok := CPUDeltas(start, end, "softirq_net_tx"); !ok || d[0] != 2 || d[1] != 0 {
		t.Errorf("per-CPU deltas %v %v", d, ok)
	}
}

func TestParseCPUTableRejects(t *testing.T) {
	for _, text := range []string{"", "\n\n", "Tcp: 1 2\n", "CPU0 CPUx\n NET_RX: 1 2\n"} {
		if tab, err := ParseCPUTable(text); err == nil {
			t.Errorf("%q parsed: %v", text, tab)
		}
	}
	// Rows with a count that is not a number, or too few, are left out;
	// extra numbers after the CPUs' counts are ignored.
	tab, err := ParseCPUTable("   CPU0 CPU1\nA: 1 x\nB: 1\nC: 1 2 3 dev\nno colon 1 2\n")
	if err != nil || len(tab) != 1 || tab["C"][1] != 2 {
		t.Errorf("%v %v", tab, err)
	}
}

// On this machine: the target's scope reads the machine's counters, a
// neighbour's does not.
func TestReadMachine(t *testing.T) {
	if _, err := os.Stat("/proc/softirqs"); err != nil {
		t.Skip("no /proc/softirqs")
	}
	with, without := Read(Scope{Machine: true}), Read(Scope{})
	if len(perCPU(with, "softirq_net_rx")) == 0 || len(perCPU(with, "interrupts")) == 0 {
		t.Errorf("nothing read: %v", with)
	}
	if len(perCPU(without, "softirq_net_rx")) != 0 {
		t.Errorf("machine counters without Scope.Machine: %v", without)
	}
	d := Diff(with, Read(Scope{Machine: true}))
	if _, ok := d["softirq_net_rx"]; !ok {
		t.Errorf("no NET_RX over a moment: %v", d)
	}
}
