package spec

import (
	"path/filepath"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// shippedMachine is the machine the shipped experiments must fit: 2 cores.
var shippedMachine = Machine{CPUs: 2, MemBytes: 24 << 30}

// Every experiment shipped in experiments/ is valid on a 2-core machine,
// and so is every profile of it, planned for any machine: a profile
// written for a larger one (a paper's) is planned here with warnings.
func TestShippedExperimentsAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testutil.ModuleRoot(), "experiments", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no experiments found: %v", err)
	}
	profiles := 0
	for _, f := range files {
		e, err := Load(f, nil, shippedMachine)
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		if len(e.Cells()) == 0 {
			t.Errorf("%s has no cells", f)
		}
		for _, name := range e.Profiles() {
			profiles++
			pe, warnings, err := LoadForPlan(f, Options{Profile: name, Machine: shippedMachine})
			if err != nil {
				t.Errorf("%s --profile %s:\n%v", f, name, err)
				continue
			}
			if got, _ := pe.Profile(); got != name || len(pe.Cells()) == 0 {
				t.Errorf("%s --profile %s: read as profile %q, %d cells", f, name, got, len(pe.Cells()))
			}
			for _, w := range warnings {
				t.Logf("%s --profile %s: %s", f, name, w)
			}
		}
	}
	if profiles == 0 {
		t.Errorf("no shipped experiment has a profile (quickstart.yaml has quick and thorough)")
	}
}
