package workloads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// docs/workloads.md documents every workload, parameter and metric that
// exists, so the documentation cannot silently fall behind the code.
func TestDocsCoverEveryWorkload(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(), "docs", "workloads.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, typ := range workload.Types() {
		i := strings.Index(doc, "## "+typ+" ")
		if i < 0 {
			t.Errorf("docs/workloads.md has no section \"## %s — …\"", typ)
			continue
		}
		section := doc[i:]
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
		s, _ := workload.Lookup(typ)
		for _, p := range s.Params {
			if !strings.Contains(section, "`"+p.Name+"`") {
				t.Errorf("%s: parameter %s not documented", typ, p.Name)
			}
		}
		for _, m := range s.Metrics {
			if !strings.Contains(section, "`"+m.Name+"`") {
				t.Errorf("%s: metric %s not documented", typ, m.Name)
			}
		}
	}
}
