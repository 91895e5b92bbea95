// Package testutil holds helpers shared by tests that need the real
// ctrbench binary (the agent inside containers and host processes).
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

var (
	once     sync.Once
	built    string
	buildErr error
)

// Binary returns the path of a static ctrbench binary with the C kernels
// beside it: $CTRBENCH_BIN when set (make test sets it), else the
// repository's bin/ctrbench, built once per test process with `make build`
// — the same build users get.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CTRBENCH_BIN"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	once.Do(func() { built, buildErr = makeBuild() })
	if buildErr != nil {
		t.Fatalf("building ctrbench: %v", buildErr)
	}
	return built
}

// makeBuild runs `make build` under an exclusive lock: go test runs
// packages in parallel, and each may get here.
func makeBuild() (string, error) {
	root := moduleRoot()
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(root, "bin", ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	cmd := exec.Command("make", "-s", "build")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make build: %w: %s", err, out)
	}
	return filepath.Join(root, "bin", "ctrbench"), nil
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ModuleRoot is the repository root, for tests that read experiments/.
func ModuleRoot() string { return moduleRoot() }

// RequireRoot skips a test that needs root (cgroups, links, Docker).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates cgroups, links or containers")
	}
}
