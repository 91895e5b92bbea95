package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/engine"
)

// A role's image: is looked up in the engine when the file is validated:
// one the engine lacks is refused before anything starts (exit 2, at its
// line, saying how to get it there); an engine that cannot be asked
// defers the check, and a note says so.
func TestImageLookedUpAtValidation(t *testing.T) {
	if err := engine.Available(context.Background()); err != nil {
		t.Skipf("no Docker Engine: %v", err)
	}
	file := filepath.Join(t.TempDir(), "img.yaml")
	src := `name: img
factors:
  platform: [docker]
workloads:
  - name: web
    type: service
    params:
      image: ctrbench-no-such-image:1
      port: 8080
      client: {type: http.get, params: {duration: 1s}}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (int, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), []string{"run", file, "--dry-run"}, &out, &errOut)
		return code, errOut.String() + out.String()
	}
	code, out := run()
	if code != ExitInvalidInput || !strings.Contains(out, "img.yaml:8:") || !strings.Contains(out, "image ctrbench-no-such-image:1 is not in the Docker Engine") || !strings.Contains(out, "docker load") {
		t.Errorf("an image the engine lacks: exit %d, want %d at its line saying how to load it:\n%s", code, ExitInvalidInput, out)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	code, out = run()
	if code != ExitOK || !strings.Contains(out, "note: ") || !strings.Contains(out, "image ctrbench-no-such-image:1 not looked up now") || !strings.Contains(out, "when the platform is prepared") {
		t.Errorf("an engine that does not answer: exit %d, want the check deferred with a note:\n%s", code, out)
	}
}
