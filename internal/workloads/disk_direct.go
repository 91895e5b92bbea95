package workloads

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// directIOAccepted reports whether the filesystem holding dir takes
// O_DIRECT: it creates a file there with O_DIRECT, writes one aligned 4 KiB
// block and removes the file. Filesystems that refuse it (ramfs, tmpfs
// before Linux 6.6) fail the open, or the write, with EINVAL; any other
// error is returned.
func directIOAccepted(dir string) (bool, error) {
	path := filepath.Join(dir, "ctrbench-direct-probe")
	fd, err := syscall.Open(path, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_DIRECT|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.EINVAL) {
		os.Remove(path) // some filesystems create the file before refusing the flag
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("probing O_DIRECT in %s: %w", dir, err)
	}
	defer os.Remove(path)
	defer syscall.Close(fd)
	// An anonymous mapping is page-aligned, as O_DIRECT wants its buffer.
	buf, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return false, fmt.Errorf("probing O_DIRECT: %w", err)
	}
	defer syscall.Munmap(buf)
	if _, err := syscall.Write(fd, buf); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			return false, nil
		}
		return false, fmt.Errorf("probing O_DIRECT in %s: %w", dir, err)
	}
	return true, nil
}
