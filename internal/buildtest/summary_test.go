package buildtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// A CI log may keep only its tail. When a test package times out, go test
// gives the panic and the goroutines' stacks to the test that was running
// and never ends it; the summary must still print them, and its last
// lines must name the test that hung and where this module's code waited.
// Run on a package made here whose one test sleeps past -timeout.
func TestSummaryNamesWhatHung(t *testing.T) {
	for _, tool := range []string{"go", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module github.com/ctrbench/ctrbench\n\ngo 1.22\n",
		"hang_test.go": `package hang

import (
	"testing"
	"time"
)

func TestFine(t *testing.T) {}

func TestBroken(t *testing.T) { t.Log("a log line"); t.Error("the error") }

func TestHang(t *testing.T) {
	t.Run("inner", func(t *testing.T) { waitForEver() })
}

func waitForEver() { time.Sleep(time.Hour) }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gotest := exec.Command("go", "test", "-json", "-count=1", "-timeout", "3s", ".")
	gotest.Dir = dir
	gotest.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	js, err := gotest.Output()
	if err == nil {
		t.Fatalf("the package that hangs passed:\n%s", js)
	}
	summary := exec.Command("python3", filepath.Join(testutil.ModuleRoot(), "scripts", "gotest-summary.py"))
	summary.Stdin = bytes.NewReader(js)
	out, err := summary.CombinedOutput()
	if err != nil {
		t.Fatalf("the summary failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"--- UNFINISHED: TestHang/inner",
		"panic: test timed out after 3s",
		"goroutine ",      // the stacks of this module's goroutines
		"hang_test.go:16", // waitForEver's line
		"--- FAIL: TestBroken",
		"FAIL\tgithub.com/ctrbench/ctrbench",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary does not print %q:\n%s", want, text)
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	tail := strings.Join(lines[len(lines)-3:], "\n")
	for _, want := range []string{
		"failed (2):",
		"ctrbench TestBroken: hang_test.go:10: the error",
		"ctrbench TestHang/inner: unfinished: panic: test timed out after 3s",
		"waitForEver hang_test.go:16 [sleep]",
	} {
		if !strings.Contains(tail, want) {
			t.Errorf("the summary's last lines do not say %q:\n%s", want, tail)
		}
	}
}
