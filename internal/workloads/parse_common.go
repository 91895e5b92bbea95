package workloads

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// runToolIn is runTool with a working directory: sysbench fileio creates
// its files in the current directory and has no option to put them
// elsewhere.
func runToolIn(ctx context.Context, dir, path string, args ...string) (stdout []byte, raw string, err error) {
	var out, errb bytes.Buffer
	cmd := toolCommand(ctx, path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	raw = strings.TrimSpace(out.String() + "\n" + errb.String())
	if err != nil {
		return out.Bytes(), raw, fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, lastLine(errb.String(), out.String()))
	}
	return out.Bytes(), raw, nil
}

// emptyDataDir removes everything a disk workload (or the tool it ran)
// left in its data directory, so a trial's files never outlive it even
// when the tool was killed half way. The directory itself stays: it
// belongs to the agent.
func emptyDataDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var first error
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// dataDir returns the directory a disk workload must work in, refusing to
// run without one: writing to the agent's working directory would put
// files where nobody removes them.
func dataDir(env workload.Env) (string, error) {
	if env.DataDir == "" {
		return "", fmt.Errorf("no data directory: disk workloads run only under the agent, which provides one")
	}
	return env.DataDir, nil
}

// positive reports an error unless v is a finite number above zero.
func positive(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%s is %v, want a finite number above zero", what, v)
	}
	return nil
}

// agrees reports whether a and b differ by at most rel of the larger
// plus abs (for values printed with few decimals).
func agrees(a, b, rel, abs float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))+abs
}

// diskLog writes a diagnostic line when the agent gave a logger.
func diskLog(env workload.Env, format string, a ...any) {
	if env.Log != nil {
		env.Log(format, a...)
	}
}
