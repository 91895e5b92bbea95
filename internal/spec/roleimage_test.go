package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// What a service's client runs from its own image is checked against
// that image and refused at the client's line, not the server's image
// line: the check asks the workload what each role runs
// (workload.Spec.RoleOf), and the parser never reads the client
// parameter itself. A program missing from the image, and an archive
// that is no image (the server's image_archive line took that before).
func TestClientImageAtClientLine(t *testing.T) {
	archive := filepath.Join(testutil.ModuleRoot(), "images", "redis.tar")
	if _, err := os.Stat(archive); err != nil {
		t.Skip("images/redis.tar not built (make images builds it)")
	}
	for name, c := range map[string]struct{ clientArchive, command, want string }{
		"missing program": {archive, "[no-such-program-ctb, -h, \"{server.host}\"]", "has no program no-such-program-ctb to run the client"},
		"not an image":    {filepath.Join(testutil.ModuleRoot(), "go.mod"), "[redis-benchmark]", "(client)"},
	} {
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
          image_archive: `+c.clientArchive+`
          command: `+c.command+`
`)
		if len(ps) != 1 || !strings.HasPrefix(ps[0], "test.yaml:11:") || !strings.Contains(ps[0], c.want) {
			t.Errorf("%s: problems %q: want one, at the client's line 11, saying %q", name, ps, c.want)
		}
	}
}
