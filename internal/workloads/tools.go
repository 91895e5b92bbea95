package workloads

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// lookTool finds an external tool — beside the ctrbench executable first
// (ctrbench's own C kernels, built by the Makefile), then in PATH — or says
// which package provides it.
func lookTool(t workload.Tool) (string, error) {
	path, err := findProgram(t.Binary)
	if err != nil {
		if t.Package == "" {
			return "", fmt.Errorf("%s not found beside ctrbench or in PATH: build it with `make build`", t.Binary)
		}
		return "", fmt.Errorf("%s not found: install the Debian package %s (scripts/setup.sh does), then rebuild the image with `ctrbench image build`", t.Binary, t.Package)
	}
	return path, nil
}

// findProgram finds a program by name beside the ctrbench executable (in an
// agent image, the tools sit there), then in PATH.
func findProgram(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

// runTool runs a tool to completion and returns stdout and stderr joined for
// the record when it fails.
func runTool(ctx context.Context, path string, args ...string) (stdout []byte, raw string, err error) {
	var out, errb bytes.Buffer
	cmd := toolCommand(ctx, path, args...)
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

// toolCommand is exec.CommandContext for external tools, made safe for
// tools that fork (fio's job processes, pbzip2's threads are fine, but a
// forked child holding stdout would keep Wait blocked forever): the tool
// gets a process group of its own, cancelling kills the whole group, and
// Wait gives up on the output pipes WaitDelay after the tool exits. The
// tool is killed when the agent dies (PR_SET_PDEATHSIG): in a group of
// its own it would not get a signal sent to the agent's, and a user's
// server (redis-server on the host network) outlived an agent that was
// killed, holding its port for the next campaign.
func toolCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
