package agent

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// trimText gives back the pages of the ctrbench binary's code and
// read-only data that start-up mapped: the whole program (the orchestrator's
// engine client, SQLite, the reports) initialises in every agent, and the
// kernel maps pages around each one touched. They are clean file pages,
// shared with the page cache: dropping them from this process costs
// nothing, and an agent faults back in only what it runs. Writable
// mappings (data, heap) are never touched.
func trimText() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// address perms offset dev inode path
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// The raw call: the range is this process's own mapping, named by
		// address, and nothing in Go reads it as a slice.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}
