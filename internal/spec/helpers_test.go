package spec

import (
	"errors"
	"strings"
	"testing"

	_ "github.com/ctrbench/ctrbench/internal/platform/drivers" // registers native and docker
	_ "github.com/ctrbench/ctrbench/internal/userkinds"        // registers exec and service
	_ "github.com/ctrbench/ctrbench/internal/workloads"        // registers cpu.primes, net.tcp_stream, net.iperf3
)

// testMachine is the machine every validation test assumes: 2 CPUs, 8GiB.
var testMachine = Machine{CPUs: 2, MemBytes: 8 << 30}

// parse parses an inline experiment that must be valid.
func parse(t *testing.T, text string, sets ...string) *Experiment {
	t.Helper()
	e, err := Parse("test.yaml", []byte(text), sets, testMachine)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v\n--- file:\n%s", err, text)
	}
	return e
}

// problemsOf parses an inline experiment that must be invalid and returns
// its problems sorted as Error() prints them.
func problemsOf(t *testing.T, text string, sets ...string) []string {
	t.Helper()
	e, err := Parse("test.yaml", []byte(text), sets, testMachine)
	if err == nil {
		t.Fatalf("Parse: want problems, got none (experiment %q)\n--- file:\n%s", e.Name, text)
	}
	if e != nil {
		t.Errorf("Parse returned an experiment together with an error")
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error is %T, want Problems: %v", err, err)
	}
	lines := strings.Split(ps.Error(), "\n")
	if len(lines) != len(ps) {
		t.Fatalf("Problems.Error() has %d lines for %d problems:\n%v", len(lines), len(ps), ps)
	}
	return lines
}

// oneProblem parses an invalid experiment with exactly one problem, which
// must contain every want substring.
func oneProblem(t *testing.T, text string, sets []string, want ...string) {
	t.Helper()
	got := problemsOf(t, text, sets...)
	if len(got) != 1 {
		t.Fatalf("want 1 problem, got %d:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, w := range want {
		if !strings.Contains(got[0], w) {
			t.Errorf("problem %q\n  does not contain %q", got[0], w)
		}
	}
}

const cpuOnly = `name: cpu only
workloads:
  - {name: cpu, type: cpu.primes}
`
