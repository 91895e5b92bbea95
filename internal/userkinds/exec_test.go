package userkinds

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// execValues resolves exec parameters as the parser hands them over.
func execValues(t *testing.T, user map[string]string) workload.Values {
	t.Helper()
	return values(t, "exec", user)
}

// Each way a user's command can fail is a failed trial that says why.
func TestExecFailures(t *testing.T) {
	ctx := context.Background()
	jsonMetric := `{"ops":{"path":"result.ops","unit":"ops/s","better":"higher"}}`
	for name, c := range map[string]struct {
		user map[string]string
		want []string
	}{
		"non-zero exit": {map[string]string{"command": `["sh","-c","echo doing; echo broken pipe dream >&2; exit 3"]`},
			[]string{"exit status 3", "broken pipe dream"}},
		"missing metric": {map[string]string{"command": `["sh","-c","echo '{\"result\":{\"other\":1}}'"]`, "metrics": jsonMetric},
			[]string{`"ops"`, "other"}},
		"not a number": {map[string]string{"command": `["sh","-c","echo '{\"result\":{\"ops\":\"fast\"}}'"]`, "metrics": jsonMetric},
			[]string{`"ops"`, "fast"}},
		"not found": {map[string]string{"command": `["no-such-program-ctb"]`},
			[]string{"no-such-program-ctb not found"}},
		"too much output": {map[string]string{"command": `["sh","-c","head -c 17000000 /dev/zero | tr '\\0' x"]`, "metrics": jsonMetric},
			[]string{"more than the 16777216"}},
	} {
		_, raw, err := runExec(ctx, execValues(t, c.user), toolEnv(t))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error()+raw, w) {
				t.Errorf("%s: %q not in\n%v\n%s", name, w, err, raw)
			}
		}
	}
}

// A command that never ends is killed with its children at the timeout:
// nothing it started outlives the trial.
func TestExecTimeoutKillsTheGroup(t *testing.T) {
	work := t.TempDir()
	p := execValues(t, map[string]string{
		"command": `["sh","-c","sleep 300 & echo $! > child.pid; wait"]`,
		"workdir": work, "timeout": "300ms",
	})
	start := time.Now()
	_, _, err := runExec(context.Background(), p, toolEnv(t))
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to give up", d)
	}
	pid, err := os.ReadFile(filepath.Join(work, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat("/proc/" + strings.TrimSpace(string(pid)))
		if os.IsNotExist(err) {
			break
		}
		if st, _ := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat"); strings.Contains(string(st), ") Z ") {
			break // killed, waiting for its reaper
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %s outlived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// env and {trial}/{cell.*} reach the command; the contract reads JSON.
func TestExecEnvAndPlaceholders(t *testing.T) {
	s, _ := workload.Lookup("exec")
	p := execValues(t, map[string]string{
		"command": `["sh","-c","echo \"{\\\"n\\\": $N, \\\"t\\\": {trial}, \\\"c\\\": \\\"{cell.cpus}\\\"}\""]`,
		"env":     `{"N":"42"}`,
		"metrics": `{"n":{"path":"n","unit":"x","better":"higher"},"t":{"path":"t","unit":"x","better":"higher"},"c":{"path":"c","unit":"x","better":"higher"}}`,
	})
	if bad := s.UnknownPlaceholders(p, []string{"cpus"}); len(bad) != 0 {
		t.Fatalf("unknown placeholders %v", bad)
	}
	bound, err := s.Bind(mustJSON(t, p), workload.PlaceholderVars(7, map[string]string{"cpus": "1.5"}))
	if err != nil {
		t.Fatal(err)
	}
	obs, raw, err := runExec(context.Background(), jsonValues(t, bound), toolEnv(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if m := obsMap(obs); m["n"] != 42 || m["t"] != 7 || m["c"] != 1.5 {
		t.Errorf("got %v, want n 42, t 7, c 1.5", m)
	}
}

// The contract is checked with the parameters, before anything runs.
func TestExecValidation(t *testing.T) {
	s, _ := workload.Lookup("exec")
	for name, c := range map[string]struct {
		user map[string]string
		key  string
		want string
	}{
		"no command":     {map[string]string{}, "command", "exec needs a command"},
		"regex no group": {map[string]string{"command": `["x"]`, "format": "regex", "metrics": `{"a":{"pattern":"[0-9]+","unit":"x","better":"higher"}}`}, "metrics", `"a"`},
		"wrong selector": {map[string]string{"command": `["x"]`, "format": "csv", "metrics": `{"a":{"path":"x.y","unit":"x","better":"higher"}}`}, "metrics", "select"},
		"no direction":   {map[string]string{"command": `["x"]`, "metrics": `{"a":{"path":"x","unit":"x"}}`}, "metrics", "better"},
		"own wall time":  {map[string]string{"command": `["x"]`, "metrics": `{"wall_time":{"path":"x","unit":"s","better":"lower"}}`}, "metrics", "records its own wall_time"},
		"unknown key":    {map[string]string{"command": `["x"]`, "metrics": `{"a":{"path":"x","unit":"s","better":"lower","colour":"red"}}`}, "metrics", "colour"},
	} {
		_, errs := s.Resolve(c.user)
		if errs[c.key] == nil || !strings.Contains(errs[c.key].Error(), c.want) {
			t.Errorf("%s: errors %v, want %s to say %q", name, errs, c.key, c.want)
		}
	}
	// Declared order is kept: the first metric is the headline.
	v := execValues(t, map[string]string{"command": `["x"]`, "metrics": `{"z":{"path":"z","unit":"x","better":"higher"},"a":{"path":"a","unit":"x","better":"lower"}}`})
	ms := s.MetricsFor(v)
	if len(ms) != 3 || ms[0].Name != "z" || ms[1].Name != "a" || ms[2].Name != execWallTime {
		t.Errorf("metrics %+v: want z, a, wall_time", ms)
	}
}
