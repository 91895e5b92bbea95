// Package buildtest checks the build itself: what `make` does on a machine
// that lacks something it needs.
package buildtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// On a fresh machine `make build` comes before `make setup` has installed
// the compiler and OpenBLAS: it must stop saying what is missing, which
// package has it and that `make setup` installs it, not with a linker
// error. Run on a copy of the Makefile and kernels, with the missing
// things simulated by paths that do not exist.
func TestMakeNamesWhatIsMissing(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root := testutil.ModuleRoot()
	for name, c := range map[string]struct {
		args []string
		want []string
	}{
		"no OpenBLAS": {[]string{"OPENBLAS_A=/nonexistent/libopenblas.a"}, []string{"/nonexistent/libopenblas.a", "libopenblas-dev", "make setup"}},
		"no compiler": {[]string{"KERNEL_CC=ctrbench-no-such-cc"}, []string{"ctrbench-no-such-cc", "gcc", "make setup"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(root, "Makefile"), filepath.Join(dir, "Makefile"))
			for _, k := range []string{"linpack.c", "stream.c"} {
				copyFile(t, filepath.Join(root, "kernels", k), filepath.Join(dir, "kernels", k))
			}
			cmd := exec.Command("make", append([]string{"-C", dir, "kernels"}, c.args...)...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("make kernels %v succeeded:\n%s", c.args, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("make kernels %v does not say %q:\n%s", c.args, w, out)
				}
			}
			if strings.Contains(string(out), "cannot find") || strings.Contains(string(out), "No such file") {
				t.Errorf("make kernels %v reached the compiler or linker:\n%s", c.args, out)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
