package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestGolden pins every format's output for the fixture; run
// `go test ./internal/report -update` after an intended change and review
// the diff.
func TestGolden(t *testing.T) {
	rows := analysis.Rows(fixture())
	for _, name := range []string{"table", "csv", "json", "benchfmt", "openmetrics"} {
		t.Run(name, func(t *testing.T) {
			f, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := f(&buf, rows); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "report."+name+".golden")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s:\n--- got\n%s\n--- want\n%s", name, path, buf.Bytes(), want)
			}
		})
	}
}
