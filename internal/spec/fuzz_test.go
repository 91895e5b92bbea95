package spec

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds the parser experiment files and --set expressions: it
// must never panic, whatever it is given, and a file it accepts must read
// back from its stored text (resume) to the same cells. Seeded with every
// shipped experiment and every bad file; `make fuzz` runs it for 10
// minutes.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../../experiments/*.yaml")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, p := range append(seeds, bad...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "repetitions=2")
		f.Add(data, "factors.platform=[docker]")
	}
	f.Add([]byte("name: a\nrepetitions: {min: 3, max: 9, rci: 2%}\nworkloads: [{type: cpu.primes}]\n"), "repetitions.rci=5%")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		if len(data) > 8<<10 || len(set) > 512 {
			return // large inputs only make slow full factorials
		}
		e, err := Parse("fuzz.yaml", data, []string{set}, testMachine)
		if err != nil {
			if e != nil {
				t.Fatalf("an experiment together with an error: %v", err)
			}
			return
		}
		cells := e.Cells()
		if len(cells) > 300 {
			return // baselines are found cell by cell: quadratic
		}
		for _, c := range cells {
			e.BaselineOf(c, cells)
		}
		back, err := Reload(e.Path, e.Text, e.Seed, testMachine)
		if err != nil {
			t.Fatalf("accepted, but its stored text does not read back: %v\n%s", err, e.Text)
		}
		if n := len(back.Cells()); n != len(cells) {
			t.Fatalf("%d cells, %d after reading the stored text back", len(cells), n)
		}
		_ = AdaptiveOf(e.Text)
	})
}
