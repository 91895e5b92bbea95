package workdir

import (
	"os"
	"path/filepath"
	"strconv"
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
