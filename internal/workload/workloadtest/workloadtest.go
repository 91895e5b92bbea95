// Package workloadtest holds what the tests of workload implementations
// share (package workloads' built-ins, package userkinds' kinds): a
// workload's parameters resolved as the parser resolves them, a role's
// environment, observations by metric.
package workloadtest

import (
	"os"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Values resolves user's parameters of workload typ as the parser does;
// a parameter it refuses fails the test.
func Values(t *testing.T, typ string, user map[string]string) workload.Values {
	t.Helper()
	s, ok := workload.Lookup(typ)
	if !ok {
		t.Fatalf("no workload %s", typ)
	}
	v, errs := s.Resolve(user)
	if errs != nil {
		t.Fatalf("params: %v", errs)
	}
	return v
}

// ObsMap is observations by metric.
func ObsMap(obs []result.Observation) map[string]float64 {
	m := map[string]float64{}
	for _, o := range obs {
		m[o.Metric] = o.Value
	}
	return m
}

// ToolEnv is a main role's environment whose data directory must be empty
// once the test ends (a workload removes what it wrote there).
func ToolEnv(t *testing.T) workload.Env {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Errorf("the workload left %d files in its data directory, e.g. %s", len(left), left[0].Name())
		}
	})
	return workload.Env{DataDir: dir, Role: workload.Main, Log: t.Logf}
}
