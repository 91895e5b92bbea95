package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// A program missing from the image a service's client runs from is
// refused at the client's line, not the server's image line: the check
// asks the workload what each role runs (workload.Spec.RoleOf), and the
// parser never reads the client parameter itself.
func TestClientImageProgramAtClientLine(t *testing.T) {
	archive := filepath.Join(testutil.ModuleRoot(), "images", "redis.tar")
	if _, err := os.Stat(archive); err != nil {
		t.Skip("images/redis.tar not built (make images builds it)")
	}
	ps := problemsOf(t, `name: t
factors:
  platform: [native]
workloads:
  - name: kv
    type: service
    params:
      image_archive: `+archive+`
      port: 6379
      client:
        type: exec
        params:
          image_archive: `+archive+`
          command: [no-such-program-ctb, -h, "{server.host}"]
`)
	if len(ps) != 1 || !strings.HasPrefix(ps[0], "test.yaml:11:") || !strings.Contains(ps[0], "has no program no-such-program-ctb to run the client") {
		t.Errorf("problems %q: want one, at the client's line 11, naming the missing program", ps)
	}
}

// An archive of the client's that is not an image is refused at the
// client's line too (the server's image_archive line took it before).
func TestClientArchiveAtClientLine(t *testing.T) {
	archive := filepath.Join(testutil.ModuleRoot(), "images", "redis.tar")
	if _, err := os.Stat(archive); err != nil {
		t.Skip("images/redis.tar not built (make images builds it)")
	}
	notImage := filepath.Join(testutil.ModuleRoot(), "go.mod")
	ps := problemsOf(t, `name: t
factors:
  platform: [native]
workloads:
  - name: kv
    type: service
    params:
      image_archive: `+archive+`
      port: 6379
      client:
        type: exec
        params:
          image_archive: `+notImage+`
          command: [redis-benchmark]
`)
	if len(ps) != 1 || !strings.HasPrefix(ps[0], "test.yaml:11:") || !strings.Contains(ps[0], "(client)") {
		t.Errorf("problems %q: want one, at the client's line 11", ps)
	}
}
