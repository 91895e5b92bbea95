// Package workdir keeps a platform's per-campaign directories on the host
// (a nested parent's sockets and stores, podman's storage): each records
// the ctrbench that made it, as campaigns do (sysinfo.Owner), so `ctrbench
// clean` removes the directories of runs that are gone and keeps those of
// runs still going.
package workdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// ownerFile names the file that records a directory's owner.
const ownerFile = "owner"

// Make creates root/<campaign>, owned by this process, and returns it.
func Make(root, campaign string) (string, error) {
	dir := filepath.Join(root, campaign)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(sysinfo.Owner()+"\n"), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// Clean removes, with remove, the directories below root of the campaign
// o names (every campaign when none) whose owner is gone — or all of them
// with o.Force. what names such a directory in the report ("directory",
// "podman storage").
func Clean(root string, o platform.CleanOptions, what string, remove func(dir string) error) (platform.Cleaned, error) {
	var out platform.Cleaned
	dirs, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return out, nil
	} else if err != nil {
		return out, err
	}
	for _, d := range dirs {
		if o.Campaign != "" && d.Name() != o.Campaign {
			continue
		}
		dir := filepath.Join(root, d.Name())
		if !o.Force && ownerAlive(dir) {
			out.Kept = append(out.Kept, what+" "+dir)
			continue
		}
		if err := remove(dir); err != nil {
			return out, fmt.Errorf("removing %s %s: %w", what, dir, err)
		}
		out.Removed = append(out.Removed, what+" "+dir)
	}
	return out, nil
}

// ownerAlive reports whether the ctrbench that made dir still runs.
func ownerAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	return err == nil && sysinfo.OwnerAlive(strings.TrimSpace(string(b)))
}

// Kill sends SIGKILL to the processes running program (argv[0], by base
// name) whose command line names a path inside dir: what a killed run left
// on a campaign's directory (a podman service, LXC monitors, QEMU).
func Kill(program, dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) != program || !strings.Contains(string(b), dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// RemoveCaches removes a platform's caches shared by campaigns (root file
// systems, initramfs files: `ctrbench clean --images`), those that exist,
// and names each removed as what + its path.
func RemoveCaches(what string, dirs ...string) ([]string, error) {
	var removed []string
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return removed, err
		}
		removed = append(removed, what+" "+dir)
	}
	return removed, nil
}
