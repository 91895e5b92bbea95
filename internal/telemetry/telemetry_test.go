package telemetry

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	start := Sample{"cpu_seconds": 1.5, "cpu_throttled_periods": 10, "memory_peak_bytes": 100, "tcp_retrans_segs": 7, "blkio_write_bytes": 50}
	end := Sample{"cpu_seconds": 4, "cpu_throttled_periods": 25, "memory_peak_bytes": 900, "tcp_retrans_segs": 5, "ctx_switches_voluntary": 3}
	got := Diff(start, end)
	want := map[string]float64{"cpu_seconds": 2.5, "cpu_throttled_periods": 15, "memory_peak_bytes": 900}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// A counter that went backwards (reset) and one missing at the start
	// are left out, never reported as a wrong number.
	for _, k := range []string{"tcp_retrans_segs", "ctx_switches_voluntary", "blkio_write_bytes"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s reported", k)
		}
	}
}

func TestSNMP(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snmp")
	text := `Ip: Forwarding DefaultTTL
Ip: 1 64
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 3306 1470 12 69 4 2811925 3322718 264 0 1541 0
Udp: InDatagrams NoPorts
Udp: 1 2
`
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m := snmpTCP(p)
	if m["RetransSegs"] != 264 || m["OutSegs"] != 3322718 {
		t.Fatalf("%v", m)
	}
}

// Reading the calling process: CPU time grows with work done.
func TestReadSelf(t *testing.T) {
	a := Read(Scope{})
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i % 7
	}
	b := Read(Scope{})
	d := Diff(a, b)
	if d["cpu_seconds"] <= 0 || x == 0 {
		t.Errorf("cpu_seconds %v after a busy loop", d["cpu_seconds"])
	}
}
