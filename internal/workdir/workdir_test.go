package workdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// A directory whose owner runs (this test) is kept unless forced; one whose
// owner is gone — or whose pid now belongs to another process — is removed.
func TestClean(t *testing.T) {
	root := t.TempDir()
	if _, err := Make(root, "live"); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(root, "dead")
	os.MkdirAll(dead, 0o711)
	// This process's pid with another start time: a reused pid.
	os.WriteFile(filepath.Join(dead, ownerFile), []byte(strconv.Itoa(os.Getpid())+" 1\n"), 0o644)
	var removed []string
	rm := func(d string) error { removed = append(removed, d); return os.RemoveAll(d) }
	got, err := Clean(root, platform.CleanOptions{}, "directory", rm)
	if err != nil || len(got.Removed) != 1 || len(got.Kept) != 1 || removed[0] != dead {
		t.Fatalf("clean: %+v %v (removed %v)", got, err, removed)
	}
	got, err = Clean(root, platform.CleanOptions{Campaign: "live", Force: true}, "directory", rm)
	if err != nil || len(got.Removed) != 1 {
		t.Fatalf("forced: %+v %v", got, err)
	}
	if got, err := Clean(filepath.Join(root, "none"), platform.CleanOptions{}, "directory", rm); err != nil || len(got.Removed) != 0 {
		t.Fatalf("no root: %+v %v", got, err)
	}
}

// TestKill ends the processes of a program that name a path inside the
// directory, and only those.
func TestKill(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	mine := exec.Command("sh", "-c", "sleep 60", filepath.Join(dir, "x"))
	theirs := exec.Command("sh", "-c", "sleep 60", filepath.Join(other, "x"))
	for _, c := range []*exec.Cmd{mine, theirs} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = theirs.Process.Kill(); _ = theirs.Wait() })
	Kill("sleep", dir) // another program: nothing happens
	Kill("sh", dir)
	if err := mine.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the process naming the directory: %v", err)
	}
	if theirs.ProcessState != nil {
		t.Error("a process naming another directory was killed")
	}
}
