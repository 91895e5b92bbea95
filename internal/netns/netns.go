// Package netns runs code and starts processes inside Linux network
// namespaces. Named namespaces follow iproute2's convention (a bind mount at
// /run/netns/<name>, so `ip netns list` shows them); every name ctrbench
// creates starts with "ctb", and Delete refuses any other.
//
// Network namespaces are per thread: Do runs its function on a locked OS
// thread that has joined the namespace and then restores the thread, so no
// other goroutine ever runs in the namespace by accident. A socket keeps the
// namespace it was created in, so a listener or connection made inside Do
// can be used after Do returns.
package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// RunDir is where named namespaces are mounted (iproute2's NETNS_RUN_DIR).
const RunDir = "/run/netns"

// Prefix starts every namespace name this package creates or deletes.
const Prefix = "ctb"

// killWait bounds how long Delete waits for killed processes to leave the
// namespace.
const killWait = 5 * time.Second

// mountMu serialises preparing RunDir and mounting, as iproute2 does with
// its own process being the only writer.
var mountMu sync.Mutex

// Create makes a named network namespace at /run/netns/<name> (iproute2's
// convention: `ip netns list` shows it) without changing the caller's
// namespace, and returns its path. name must start with "ctb".
func Create(name string) (string, error) { return mountNS(name, "") }

// Adopt names an existing network namespace, src (a path like
// /proc/<pid>/ns/net), as Create names a new one: a bind mount at
// /run/netns/<name> that keeps it alive after what holds it ends. Delete
// then kills what runs in it, as for one Create made.
func Adopt(name, src string) (string, error) {
	if src == "" {
		return "", fmt.Errorf("adopting netns %s: no namespace given", name)
	}
	return mountNS(name, src)
}

// mountNS mounts src, or a new namespace when src is "", at RunDir/name.
func mountNS(name, src string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	mountMu.Lock()
	defer mountMu.Unlock()
	if err := prepareRunDir(); err != nil {
		return "", err
	}
	path := filepath.Join(RunDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("creating netns %s: already exists", name)
		}
		return "", fmt.Errorf("creating netns %s: %w", name, err)
	}
	f.Close()
	if src != "" {
		err = unix.Mount(src, path, "none", unix.MS_BIND, "")
	} else {
		err = onThread(
			func() error { return unix.Unshare(unix.CLONE_NEWNET) },
			func() error {
				self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
				return unix.Mount(self, path, "none", unix.MS_BIND, "")
			})
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("creating netns %s: %w", name, err)
	}
	return path, nil
}

// prepareRunDir creates RunDir and makes it a shared mount point, so
// namespace mounts propagate to other mount namespaces (what `ip netns add`
// does).
func prepareRunDir() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", RunDir, err)
	}
	bound := false
	for {
		err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("making %s a shared mount: %w", RunDir, err)
		}
		// Not a mount point yet: bind it onto itself, then retry.
		if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s: %w", RunDir, err)
		}
		bound = true
	}
}

// Delete kills every process whose network namespace is this one (compared
// by the inode of /proc/<pid>/ns/net), unmounts and removes
// /run/netns/<name>. A missing namespace is not an error.
func Delete(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	path := filepath.Join(RunDir, name)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("deleting netns %s: %w", name, err)
	}
	if err := killIn(st.Dev, st.Ino); err != nil {
		return fmt.Errorf("deleting netns %s: %w", name, err)
	}
	mountMu.Lock()
	defer mountMu.Unlock()
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil &&
		!errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting netns %s: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// killIn SIGKILLs every process (but this one) whose network namespace has
// the given device and inode, and waits until none is left in it. Killed
// processes that are our children stay zombies until reaped, but a zombie
// has no namespace any more, so it does not count.
func killIn(dev, ino uint64) error {
	self := os.Getpid()
	deadline := time.Now().Add(killWait)
	for {
		pids, err := pidsIn(dev, ino, self)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in the namespace after SIGKILL", pids)
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("killing %d: %w", pid, err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidsIn lists processes, except skip, whose network namespace matches.
func pidsIn(dev, ino uint64, skip int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == skip {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil {
			continue // gone, a zombie, or a kernel thread
		}
		if st.Dev == dev && st.Ino == ino {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// List returns the names under /run/netns that start with prefix.
func List(prefix string) ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", RunDir, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Do runs fn on a locked OS thread that has joined the namespace at path,
// then restores the thread's namespace; if restoring fails the thread is
// left locked so the runtime discards it. fn runs on a goroutine of its own:
// goroutines it starts are not in the namespace, sockets it opens are.
func Do(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening netns: %w", err)
	}
	defer target.Close()
	return onThread(func() error {
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("joining netns %s: %w", path, err)
		}
		return nil
	}, fn)
}

// onThread runs enter then fn on a fresh goroutine locked to its thread,
// and puts the thread back in its original network namespace. If enter
// fails, fn does not run.
func onThread(enter, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("opening the thread's netns: %w", err)
			return
		}
		defer orig.Close()
		if err := enter(); err != nil {
			// enter may have half-happened; restore to be sure.
			if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr == nil {
				runtime.UnlockOSThread()
			}
			done <- err
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Stay locked: the goroutine ends and the runtime kills the
			// thread rather than reuse it in the wrong namespace.
			done <- errors.Join(fnErr, fmt.Errorf("restoring the thread's netns: %w", err))
			return
		}
		runtime.UnlockOSThread()
		done <- fnErr
	}()
	return <-done
}

// Start starts cmd (cmd.Start) from a thread inside the namespace at path,
// so the child process and all its threads live in it. Wait for it as
// usual.
func Start(path string, cmd *exec.Cmd) error {
	return Do(path, cmd.Start)
}

// Sysctl writes a /proc/sys value (key like "net.ipv4.ip_forward", or a
// path relative to /proc/sys when a component itself contains dots) as seen
// inside the namespace at path.
func Sysctl(path, key, value string) error {
	rel := key
	if !strings.Contains(key, "/") {
		rel = strings.ReplaceAll(key, ".", "/")
	}
	file := filepath.Join("/proc/sys", filepath.Clean("/"+rel))
	return Do(path, func() error {
		f, err := os.OpenFile(file, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("sysctl %s: %w", key, err)
		}
		_, werr := f.WriteString(value)
		cerr := f.Close()
		if werr != nil {
			return fmt.Errorf("sysctl %s=%s: %w", key, value, werr)
		}
		if cerr != nil {
			return fmt.Errorf("sysctl %s=%s: %w", key, value, cerr)
		}
		return nil
	})
}

// checkName accepts a single path component starting with Prefix.
func checkName(name string) error {
	if !strings.HasPrefix(name, Prefix) || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("netns name %q: must start with %q and be a plain file name", name, Prefix)
	}
	return nil
}
