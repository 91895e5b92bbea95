package userkinds

import (
	"encoding/json"
	"testing"

	"github.com/ctrbench/ctrbench/internal/workload"
	"github.com/ctrbench/ctrbench/internal/workload/workloadtest"
)

// What the tests of workload implementations share.
var (
	values  = workloadtest.Values
	obsMap  = workloadtest.ObsMap
	toolEnv = workloadtest.ToolEnv
)

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
