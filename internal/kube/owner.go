package kube

import (
	"bytes"
	"os"
	"strconv"
)

// ownerRunning reports whether pid (an owner-pid label) is a live process
// that is ctrbench, so a campaign still running is not pulled from under
// it; a reused pid that belongs to another program does not count.
//
// It is engine's ownerRunning, copied: kube must not import engine (each
// is the gateway to one API, and engine pulls in the Docker SDK), and the
// rule is four lines.
func ownerRunning(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(n) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("ctrbench"))
}
