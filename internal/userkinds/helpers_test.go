package userkinds

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// values resolves user's parameters of workload typ as the parser does.
func values(t *testing.T, typ string, user map[string]string) workload.Values {
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

// obsMap is observations by metric.
func obsMap(obs []result.Observation) map[string]float64 {
	m := map[string]float64{}
	for _, o := range obs {
		m[o.Metric] = o.Value
	}
	return m
}

// toolEnv is a main role's environment with a data directory that must
// be empty after the run.
func toolEnv(t *testing.T) workload.Env {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Errorf("the workload left %d files in its data directory, e.g. %s", len(left), left[0].Name())
		}
	})
	return workload.Env{DataDir: dir, Role: workload.Main, Log: t.Logf}
}

func mustJSON(t *testing.T, v workload.Values) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonValues(t *testing.T, s string) workload.Values {
	t.Helper()
	var v workload.Values
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
