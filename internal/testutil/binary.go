// Package testutil holds helpers shared by tests that need the real
// ctrbench binary (the agent inside containers and host processes).
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once     sync.Once
	built    string
	buildErr error
)

// Binary returns the path of a static ctrbench binary: $CTRBENCH_BIN when set
// (make test sets it), else one built once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CTRBENCH_BIN"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	once.Do(func() {
		dir, err := os.MkdirTemp("", "ctrbench-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "ctrbench")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/ctrbench")
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("building ctrbench: %v", buildErr)
	}
	return built
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
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
