// Package lockholder says which processes hold a file, as far as Linux
// tells: the locks /proc/locks lists on it (POSIX fcntl locks, open file
// description locks, flock) with their byte ranges, and the processes
// that have it open (/proc/<pid>/fd). It reads and never acts; where
// /proc is missing or a process is out of sight (another PID namespace,
// another machine) it finds less, or nothing.
package lockholder

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// procRoot is where proc(5) is mounted; tests point it elsewhere.
var procRoot = "/proc"

// Lock is one lock /proc/locks lists on one of the files asked about.
type Lock struct {
	// PID holds it; -1 for an open file description lock, which belongs
	// to an open file rather than a process.
	PID   int
	Kind  string // POSIX, FLOCK or OFDLCK
	Write bool   // a write (exclusive) lock, else a read (shared) one
	Path  string // which of the files asked about
	Start int64  // first byte locked
	End   int64  // last byte locked, -1 for the end of the file
}

// Covers says whether the lock covers byte off of its file.
func (l Lock) Covers(off int64) bool {
	return l.Start <= off && (l.End < 0 || off <= l.End)
}

// fileID is a file as /proc/locks names it: its device and inode.
type fileID struct {
	major, minor uint32
	ino          uint64
}

// Locks lists the locks held on the files at paths, in /proc/locks's
// order. A file that does not exist holds none; locks waited for (the
// "->" lines) are not held and are not listed.
func Locks(paths ...string) ([]Lock, error) {
	ids := map[fileID]string{}
	for _, p := range paths {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			continue
		}
		ids[fileID{unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino}] = p
	}
	if len(ids) == 0 {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(procRoot, "locks"))
	if err != nil {
		return nil, fmt.Errorf("reading the locks the kernel holds: %w", err)
	}
	defer f.Close()
	var out []Lock
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, id, ok := parseLine(sc.Text())
		if !ok {
			continue
		}
		if p, ok := ids[id]; ok {
			l.Path = p
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the locks the kernel holds: %w", err)
	}
	return out, nil
}

// parseLine reads one line of /proc/locks:
//
//	1: POSIX  ADVISORY  WRITE 16002 fe:00:9978017 120 120
//
// (id, kind, advisory or mandatory, access, pid, major:minor:inode in
// hexadecimal, hexadecimal and decimal, first and last byte or EOF).
func parseLine(s string) (Lock, fileID, bool) {
	f := strings.Fields(s)
	if len(f) < 8 || f[1] == "->" {
		return Lock{}, fileID{}, false
	}
	f = f[1:]
	switch f[0] {
	case "POSIX", "FLOCK", "OFDLCK":
	default:
		return Lock{}, fileID{}, false // leases, delegations
	}
	l := Lock{Kind: f[0], Write: f[2] == "WRITE"}
	pid, err := strconv.Atoi(f[3])
	if err != nil {
		return Lock{}, fileID{}, false
	}
	l.PID = pid
	dev := strings.Split(f[4], ":")
	if len(dev) != 3 {
		return Lock{}, fileID{}, false
	}
	major, err1 := strconv.ParseUint(dev[0], 16, 32)
	minor, err2 := strconv.ParseUint(dev[1], 16, 32)
	ino, err3 := strconv.ParseUint(dev[2], 10, 64)
	start, err4 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return Lock{}, fileID{}, false
	}
	l.Start, l.End = start, -1
	if f[6] != "EOF" {
		if l.End, err = strconv.ParseInt(f[6], 10, 64); err != nil {
			return Lock{}, fileID{}, false
		}
	}
	return l, fileID{uint32(major), uint32(minor), ino}, true
}

// Openers lists the processes other than this one that have one of the
// files at paths open, in pid order. Only processes whose descriptors
// this one may read are seen (all of them for root).
func Openers(paths ...string) []int {
	want := map[string]bool{}
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			want[abs] = true
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				want[real] = true
			}
		}
	}
	procs, _ := os.ReadDir(procRoot)
	self := os.Getpid()
	var out []int
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err == nil && want[target] {
				out = append(out, pid)
				break
			}
		}
	}
	sort.Ints(out)
	return out
}

// Process names pid as "pid 4242 (sqlite3)": its command name from
// /proc, or the pid alone when it cannot be read.
func Process(pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
	if comm := strings.TrimSpace(string(b)); err == nil && comm != "" {
		return fmt.Sprintf("pid %d (%s)", pid, comm)
	}
	return fmt.Sprintf("pid %d", pid)
}
