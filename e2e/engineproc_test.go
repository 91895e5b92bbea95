package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// engineProc is the machine's Docker Engine process as it was started:
// what a fault-injection case freezes or kills, and starts again the same
// way (the same binary, arguments, environment and output) — never
// another engine, never the one of a nested parent or a swarm node.
type engineProc struct {
	pid  int
	exe  string   // the binary it runs (/proc/<pid>/exe)
	argv []string // its command line, argv[0] included
	env  []string
	out  string // the regular file its standard output went to, "" for none
}

// engineSockets are where an engine listens by default.
var engineSockets = []string{"/var/run/docker.sock", "/run/docker.sock"}

// machineEngine finds the process listening on the engine's socket (in
// this network namespace: /proc/net/unix is per namespace) and reads how
// it was started.
func machineEngine(t *testing.T) engineProc {
	t.Helper()
	inode, err := listeningInode(engineSockets)
	if err != nil {
		t.Fatalf("the machine's engine: %v", err)
	}
	pid, err := socketOwner(inode, "dockerd")
	if err != nil {
		t.Fatalf("the machine's engine: %v", err)
	}
	e := engineProc{pid: pid}
	if e.exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil {
		t.Fatal(err)
	}
	e.argv = nulSplit(t, fmt.Sprintf("/proc/%d/cmdline", pid))
	e.env = nulSplit(t, fmt.Sprintf("/proc/%d/environ", pid))
	if out, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid)); err == nil {
		if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
			e.out = out
		}
	}
	return e
}

// signal sends sig to the engine's process alone.
func (e engineProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(e.pid, sig); err != nil {
		t.Fatalf("signalling the engine (pid %d): %v", e.pid, err)
	}
}

// containerd is the containerd the engine started (its child).
func (e engineProc) containerd(t *testing.T) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 || s[open+1:end] != "containerd" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(e.pid) {
			pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
			return pid
		}
	}
	t.Fatalf("the engine (pid %d) has no containerd of its own (one it connects to elsewhere is not its to kill here)", e.pid)
	return 0
}

// restart starts the engine again as it was started, in a session of its
// own, once the killed one is gone; it returns the new process.
func (e engineProc) restart(t *testing.T) engineProc {
	t.Helper()
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", e.pid)); os.IsNotExist(err) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// What a killed engine leaves in the way of a new one: its
	// containerd's pid file, naming a process since gone.
	staleContainerdPid()
	cmd := exec.Command(e.exe, e.argv[1:]...)
	cmd.Args[0] = e.argv[0]
	cmd.Env, cmd.Dir = e.env, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if e.out != "" {
		f, err := os.OpenFile(e.out, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the engine again (%s %v): %v", e.exe, e.argv[1:], err)
	}
	go cmd.Wait() //nolint:errcheck // it outlives the test; reaped if it ends first
	t.Logf("the engine started again as before: %s %s (pid %d)", e.exe, strings.Join(e.argv[1:], " "), cmd.Process.Pid)
	waitEngine(t, time.Minute)
	n := machineEngine(t)
	if n.exe != e.exe || strings.Join(n.argv, " ") != strings.Join(e.argv, " ") {
		t.Errorf("the engine that answers is not the one started as before: %s %v, want %s %v", n.exe, n.argv, e.exe, e.argv)
	}
	return n
}

// listeningInode is the inode of the first of paths a unix socket listens
// on, from /proc/net/unix.
func listeningInode(paths []string) (string, error) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return "", err
	}
	defer f.Close()
	found := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path; flags 00010000
		// is __SO_ACCEPTCON: a listening socket.
		fl := strings.Fields(sc.Text())
		if len(fl) == 8 && fl[3] == "00010000" {
			found[fl[7]] = fl[6]
		}
	}
	for _, p := range paths {
		if ino, ok := found[p]; ok {
			return ino, nil
		}
	}
	return "", fmt.Errorf("no socket listens on %v", paths)
}

// socketOwner is the process called comm that holds socket inode.
func socketOwner(inode, comm string) (int, error) {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == want {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(c)) == comm {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no %s holds socket %s", comm, inode)
}

func nulSplit(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// staleContainerdPid removes the pid file of the engine's containerd when
// the process it names is not a containerd.
func staleContainerdPid() {
	const pidfile = "/var/run/docker/containerd/containerd.pid"
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return
	}
	pid := strings.TrimSpace(string(b))
	if c, err := os.ReadFile("/proc/" + pid + "/comm"); err != nil || strings.TrimSpace(string(c)) != "containerd" {
		_ = os.Remove(pidfile)
	}
}

// The fault-injection cases find the machine's engine by its socket, not
// by name: the right process (a dockerd, the one that answers), with how
// it was started.
func TestMachineEngineFound(t *testing.T) {
	requireDocker(t)
	e := machineEngine(t)
	if filepath.Base(e.exe) != "dockerd" || len(e.argv) == 0 || filepath.Base(e.argv[0]) != "dockerd" {
		t.Errorf("the engine's process %d runs %s %v", e.pid, e.exe, e.argv)
	}
	t.Logf("the machine's engine: pid %d, %s %v, output %q", e.pid, e.exe, e.argv[1:], e.out)
}
