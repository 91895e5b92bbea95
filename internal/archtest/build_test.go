package archtest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// Issue 10, item 14: `make build` on a fresh machine, before `make setup`,
// stopped with a linker error (cannot find libopenblas.a). It says what is
// missing and that `make setup` installs it; simulated by pointing the
// build at a library and a compiler that do not exist. Nothing is built:
// each check fails before the compiler runs.
func TestMakeBuildSaysWhatIsMissing(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-B", "bin/ctb-linpack", "OPENBLAS_A=/nonexistent/libopenblas.a"}, []string{"/nonexistent/libopenblas.a is missing", "libopenblas-dev", "make setup"}},
		{[]string{"-B", "bin/ctb-stream", "KERNEL_CC=ctrbench-no-such-cc"}, []string{"ctrbench-no-such-cc is not installed", "make setup"}},
	} {
		cmd := exec.Command("make", c.args...)
		cmd.Dir = testutil.ModuleRoot()
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("make %v succeeded", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("make %v says:\n%s\nwant %q", c.args, out, w)
			}
		}
		if strings.Contains(string(out), "cannot find") {
			t.Errorf("make %v reached the linker:\n%s", c.args, out)
		}
	}
}
