package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// systemPython is the distribution's interpreter, the one its packages
// (python3-prometheus-client, python3-junitparser) are installed for; a
// python3 earlier in PATH (pyenv's, say) does not see them.
const systemPython = "/usr/bin/python3"

// requireReader fails the test when the distribution's Python lacks
// module (package pkg, which scripts/setup.sh installs); a short run
// skips it.
func requireReader(t *testing.T, module, pkg string) {
	t.Helper()
	if err := exec.Command(systemPython, "-c", "import "+module).Run(); err != nil {
		if testing.Short() {
			t.Skipf("no %s", pkg)
		}
		t.Fatalf("no Python module %s: scripts/setup.sh installs %s", module, pkg)
	}
}

// readWith runs the Python script on file (its argument) and returns
// what it printed; a script that fails (the reader refused the file)
// fails the test, with the file.
func readWith(t *testing.T, script, file string) []byte {
	t.Helper()
	out, err := exec.Command(systemPython, "-c", script, file).CombinedOutput()
	if err != nil {
		b, _ := os.ReadFile(file)
		t.Fatalf("the reader refused %s: %v\n%s\n--- the file:\n%s", file, err, out, b)
	}
	return out
}

// The Prometheus client's own OpenMetrics parser (python3
// prometheus_client, as scripts/setup.sh installs it) reads `report
// --format openmetrics` whole — it refuses a malformed exposition — and
// finds each cell's statistics and every trial's value under the labels
// ctrbench gave them, with the values report --format json has.
func TestOpenMetricsParser(t *testing.T) {
	const parse = `
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    out[fam.name] = [{"labels": s.labels, "value": s.value} for s in fam.samples]
print(json.dumps(out))
`
	requireReader(t, "prometheus_client.openmetrics.parser", "python3-prometheus-client")
	ctx := context.Background()
	path := beforeAfter(t)
	var om, js, errOut bytes.Buffer
	if code := Main(ctx, []string{"report", "--db", path, "--campaign", "after", "--format", "openmetrics"}, &om, &errOut); code != 0 {
		t.Fatalf("openmetrics: exit %d: %s", code, errOut.String())
	}
	if code := Main(ctx, []string{"report", "--db", path, "--campaign", "after", "--format", "json"}, &js, &errOut); code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut.String())
	}
	file := filepath.Join(t.TempDir(), "after.om")
	if err := os.WriteFile(file, om.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := readWith(t, parse, file)
	var fams map[string][]struct {
		Labels map[string]string `json:"labels"`
		Value  float64           `json:"value"`
	}
	if err := json.Unmarshal(out, &fams); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rows []struct {
		Mean float64           `json:"mean"`
		Cell map[string]string `json:"cell"`
	}
	if err := json.Unmarshal(js.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		found := false
		for _, s := range fams["ctrbench_mean"] {
			if s.Labels["f_platform"] == r.Cell["platform"] && s.Labels["metric"] == "throughput" && s.Labels["campaign"] == "after" {
				found = s.Value == r.Mean
			}
		}
		if !found {
			t.Errorf("no ctrbench_mean of %v equal to the report's %v: %+v", r.Cell, r.Mean, fams["ctrbench_mean"])
		}
	}
	if n := len(fams["ctrbench_trial_value"]); n != 16 {
		t.Errorf("%d trial values, want 16 (8 trials in each of 2 cells)", n)
	}
	for _, s := range fams["ctrbench_trial_value"] {
		if s.Labels["seq"] == "" || s.Labels["unit"] != "Gbit/s" || s.Labels["better"] != "higher" {
			t.Errorf("a trial's labels: %v", s.Labels)
		}
	}
}
