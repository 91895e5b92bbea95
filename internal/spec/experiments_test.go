package spec

import (
	"path/filepath"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// Every experiment shipped in experiments/ is valid on a 2-core machine.
func TestShippedExperimentsAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testutil.ModuleRoot(), "experiments", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no experiments found: %v", err)
	}
	for _, f := range files {
		e, err := Load(f, nil, Machine{CPUs: 2, MemBytes: 24 << 30})
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		if len(e.Cells()) == 0 {
			t.Errorf("%s has no cells", f)
		}
	}
}
