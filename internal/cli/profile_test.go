package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/spec"
)

// Every profile of every shipped experiment dry-runs on this machine: the
// plan, its trial count and the estimated duration, whatever machine the
// profile was written for.
func TestDryRunEveryProfile(t *testing.T) {
	files, err := filepath.Glob("../../experiments/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("experiments: %v %v", files, err)
	}
	n := 0
	for _, f := range files {
		e, err := spec.Load(f, nil, spec.Machine{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range e.Profiles() {
			n++
			out := string(runMain(t, "run", f, "--profile", name, "--dry-run"))
			for _, want := range []string{"trials", "profile " + name + ";", "estimated duration on this machine: ~", "[exit 0]"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s --profile %s --dry-run: no %q in\n%s", f, name, want, out)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("no profiles dry-run")
	}
}

// --profile is a usage error when the file lacks it (the message lists its
// profiles); --resume takes neither a profile nor overrides.
func TestProfileUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "../../experiments/quickstart.yaml", "--profile", "paper", "--dry-run"}, "has no such profile; its profiles: quick, thorough"},
		{[]string{"calibrate", "../../experiments/quickstart.yaml", "--profile", "paper"}, "has no such profile; its profiles: quick, thorough"},
		{[]string{"run", "--resume", "x", "--profile", "quick"}, "--resume runs the campaign as it was stored"},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), tc.args, &bytes.Buffer{}, &stderr)
		if code != ExitInvalidInput || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, %s", tc.args, code, stderr.String())
		}
	}
}
