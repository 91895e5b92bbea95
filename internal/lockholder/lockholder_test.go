package lockholder

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
		want Lock
		id   fileID
	}{
		{"1: POSIX  ADVISORY  WRITE 16002 fe:00:9978017 120 120", true,
			Lock{PID: 16002, Kind: "POSIX", Write: true, Start: 120, End: 120}, fileID{0xfe, 0, 9978017}},
		{"4: POSIX  ADVISORY  READ 16002 fe:00:9977954 1073741826 1073742335", true,
			Lock{PID: 16002, Kind: "POSIX", Start: 1073741826, End: 1073742335}, fileID{0xfe, 0, 9977954}},
		{"9: FLOCK  ADVISORY  WRITE 1457 103:0a:762139 0 EOF", true,
			Lock{PID: 1457, Kind: "FLOCK", Write: true, Start: 0, End: -1}, fileID{0x103, 0x0a, 762139}},
		{"5: OFDLCK ADVISORY  READ -1 fe:00:1122578 201 201", true,
			Lock{PID: -1, Kind: "OFDLCK", Start: 201, End: 201}, fileID{0xfe, 0, 1122578}},
		// Waiting for a lock is not holding it.
		{"1: -> POSIX  ADVISORY  WRITE 16003 fe:00:9978017 120 120", false, Lock{}, fileID{}},
		{"2: LEASE  ACTIVE    READ 1234 fe:00:42 0 EOF", false, Lock{}, fileID{}},
		{"garbage", false, Lock{}, fileID{}},
		{"3: POSIX  ADVISORY  WRITE x fe:00:1 0 0", false, Lock{}, fileID{}},
	} {
		l, id, ok := parseLine(c.line)
		if ok != c.ok || ok && (l != c.want || id != c.id) {
			t.Errorf("%q: %+v %+v %v, want %+v %+v %v", c.line, l, id, ok, c.want, c.id, c.ok)
		}
	}
	l := Lock{Start: 120, End: 120}
	if !l.Covers(120) || l.Covers(121) || !(Lock{Start: 0, End: -1}).Covers(1<<40) {
		t.Error("Covers is wrong")
	}
}

// A POSIX lock this process takes on byte 120 of a file (as SQLite takes
// the write lock of a database in WAL mode, in its -shm file) is listed
// with its pid, range and file; another file is not.
func TestLocksFindsAPOSIXLock(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "x-shm"), filepath.Join(dir, "y")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 120, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Skipf("no POSIX locks here: %v", err)
	}
	locks, err := Locks(path, other, filepath.Join(dir, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	want := Lock{PID: os.Getpid(), Kind: "POSIX", Write: true, Path: path, Start: 120, End: 120}
	if len(locks) != 1 || locks[0] != want {
		t.Fatalf("locks %+v, want [%+v]", locks, want)
	}
	if none, err := Locks(other); err != nil || len(none) != 0 {
		t.Errorf("an unlocked file: %+v %v", none, err)
	}
}

// A process that has the file open (a sleep with it as its standard
// input) is found and named; this process, which has it open too, is not.
func TestOpenersFindsAndNamesAProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "30")
	cmd.Stdin = f
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	// The child may still be between fork and exec: its name is ours
	// until exec, its descriptor ours from the fork.
	got := Openers(path, path+"-wal")
	if !slices.Contains(got, pid) || slices.Contains(got, os.Getpid()) {
		t.Errorf("openers %v, want %d and not this process (%d)", got, pid, os.Getpid())
	}
	if name := Process(pid); name != fmt.Sprintf("pid %d (sleep)", pid) && name != fmt.Sprintf("pid %d (lockholder.test)", pid) {
		t.Errorf("Process(%d) = %q", pid, name)
	}
	if name := Process(1 << 30); name != fmt.Sprintf("pid %d", 1<<30) {
		t.Errorf("a process that does not exist: %q", name)
	}
}
