package workloads

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// lookTool finds an external tool or says which package provides it.
func lookTool(t workload.Tool) (string, error) {
	path, err := exec.LookPath(t.Binary)
	if err != nil {
		return "", fmt.Errorf("%s not found: install the Debian package %s (scripts/setup.sh does), then rebuild the image with `ctrbench image build`", t.Binary, t.Package)
	}
	return path, nil
}

// runTool runs a tool to completion and returns stdout and stderr joined for
// the record when it fails.
func runTool(ctx context.Context, path string, args ...string) (stdout []byte, raw string, err error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	raw = strings.TrimSpace(out.String() + "\n" + errb.String())
	if err != nil {
		return out.Bytes(), raw, fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), err)
	}
	return out.Bytes(), raw, nil
}
