package sysinfo

import (
	"os"
	"testing"
)

// A command name may hold spaces and parentheses; the fields are counted
// after its last ')', as proc(5) numbers them.
func TestParseStat(t *testing.T) {
	st, ok := parseStat([]byte("42 (a (b) c) S 1 1 1 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 4242 1000\n"))
	if !ok || st.name != "a (b) c" || st.field(3) != "S" || st.field(22) != "4242" || st.field(99) != "" {
		t.Fatalf("%+v %v", st, ok)
	}
	if n, ok := st.ticks(); !ok || n != 12 {
		t.Errorf("ticks %d %v, want 12", n, ok)
	}
	if _, ok := parseStat([]byte("42 no name")); ok {
		t.Error("a line without a name parsed")
	}
	if s, ok := ProcCPUSeconds(os.Getpid()); !ok || s < 0 {
		t.Errorf("this process: %v %v", s, ok)
	}
	if _, ok := ProcCPUSeconds(1 << 30); ok {
		t.Error("a process that does not exist has a CPU time")
	}
}
