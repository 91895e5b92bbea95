package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/spec"
)

// A cell the plan cannot resolve is a problem of the file, as
// validation's are: exit status 2, nothing started, no campaign recorded
// (issue 39: a published server whose client is on network published).
func TestUnplannedCellIsInvalidInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "published.yaml")
	if err := os.WriteFile(file, []byte("name: p\nfactors: {platform: [docker], network: [published]}\nworkloads: [{type: net.tcp_stream}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := file + ": cell 1 (net.tcp_stream network=published platform=docker): network published reaches the server through a port its engine publishes on this machine"
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"run", file, "--dry-run"}, &stdout, &stderr); code != ExitInvalidInput ||
		!strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "nothing was started") || stdout.Len() != 0 {
		t.Errorf("--dry-run: exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	// A run loads the file as calibrate does, before it opens the store.
	_, err := loadExperiment(spec.Options{Machine: machine()}, file)
	var ps spec.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps.Error(), want) {
		t.Errorf("loadExperiment: %v, want the one problem %q", err, want)
	}
}
