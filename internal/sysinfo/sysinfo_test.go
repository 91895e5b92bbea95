package sysinfo

import (
	"os"
	"strings"
	"testing"
)

func TestBlockDevice(t *testing.T) {
	node, mm, err := BlockDevice(os.TempDir())
	if err != nil {
		t.Skipf("temporary directory not on a block device here: %v", err)
	}
	if !strings.HasPrefix(node, "/dev/") || !strings.Contains(mm, ":") {
		t.Fatalf("BlockDevice = %q, %q", node, mm)
	}
	if _, err := os.Stat(node); err != nil {
		t.Errorf("device node %s: %v", node, err)
	}
	if _, _, err := BlockDevice("/proc"); err == nil {
		t.Error("procfs has no block device; want an error")
	}
}

func TestOwner(t *testing.T) {
	me := Owner()
	if !OwnerAlive(me) {
		t.Fatalf("this process (%q) is not alive", me)
	}
	pid, start, _ := strings.Cut(me, " ")
	for _, o := range []string{"", "x", pid + " 1", "999999999 " + start, pid} {
		if OwnerAlive(o) {
			t.Errorf("OwnerAlive(%q)", o)
		}
	}
}
