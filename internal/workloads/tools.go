package workloads

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// lookTool finds an external tool — beside the ctrbench executable first
// (ctrbench's own C kernels, built by the Makefile), then in PATH — or says
// which package provides it.
func lookTool(t workload.Tool) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), t.Binary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	path, err := exec.LookPath(t.Binary)
	if err != nil {
		if t.Package == "" {
			return "", fmt.Errorf("%s not found beside ctrbench or in PATH: build it with `make build`", t.Binary)
		}
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
		return out.Bytes(), raw, fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, lastLine(errb.String(), out.String()))
	}
	return out.Bytes(), raw, nil
}

// lastLine returns the last non-empty line of the first text that has one:
// where a tool says what went wrong.
func lastLine(texts ...string) string {
	for _, t := range texts {
		lines := strings.Split(strings.TrimSpace(t), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			return l
		}
	}
	return "(no output)"
}
