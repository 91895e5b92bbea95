package spec

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Each testdata/bad/NAME.yaml has exactly the mistakes it is named for, and
// NAME.want lists the problems Load must report, one line per problem in the
// order Problems.Error() prints them (by line). A want line is one or more
// substrings joined by " && "; the first starts with the file:line[:col]
// the problem must be reported at. Lines starting with # are comments.

var wantPosition = regexp.MustCompile(`^testdata/bad/[a-z_]+\.yaml(:\d+(:\d+)?)?: `)

func readWant(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("every bad file needs a .want sidecar: %v", err)
	}
	var out [][]string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, " && "))
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no problems", path)
	}
	return out
}

func TestBadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("found only %d bad files", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			want := readWant(t, strings.TrimSuffix(file, ".yaml")+".want")
			for _, w := range want {
				if !wantPosition.MatchString(w[0]) || !strings.HasPrefix(w[0], file+":") {
					t.Fatalf("want line %q must start with %s:LINE", w[0], file)
				}
			}
			e, err := Load(file, nil, testMachine)
			if err == nil {
				t.Fatalf("Load accepted %s (experiment %q)", file, e.Name)
			}
			if e != nil {
				t.Errorf("Load returned an experiment together with an error")
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error is %T, want Problems: %v", err, err)
			}
			got := strings.Split(err.Error(), "\n")
			if len(ps) != len(want) || len(got) != len(want) {
				t.Fatalf("want %d problems, got %d:\n%s", len(want), len(ps), err)
			}
			for i, w := range want {
				for _, sub := range w {
					if !strings.Contains(got[i], sub) {
						t.Errorf("problem %d:\n   got %s\n  want it to contain %s", i+1, got[i], sub)
					}
				}
			}
			// Every problem of a file is reported at a place in the file.
			for _, p := range ps {
				if p.File != file || p.Set != "" {
					t.Errorf("problem %+v: want File %q and no Set", p, file)
				}
			}
			// The printed problems are sorted by line, then column.
			sorted := sort.SliceIsSorted(got, func(i, j int) bool {
				return position(got[i]) < position(got[j])
			})
			if !sorted {
				t.Errorf("problems are not sorted by line:\n%s", err)
			}
		})
	}
}

// position turns "file:L:C: msg" into a sortable number.
var positionRE = regexp.MustCompile(`^[^:]+(?::(\d+))?(?::(\d+))?: `)

func position(s string) int {
	m := positionRE.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	return line*10000 + col
}

// The problems of one file are all reported at once, with the exact count,
// whatever order they were found in.
func TestSeveralProblemsAtOnce(t *testing.T) {
	got := problemsOf(t, `name: ""
repetitions: 0
warmup: x
timeout: -1s
seed: many
factors:
  platform: [native, docker]
  network: [host, bridge, host]
baseline: {platform: kvm}
workloads:
  - {name: cpu, type: cpu.primes, params: {max_prime: 1, bogus: 2}}
  - {name: io, type: disk.nope}
`)
	want := []string{
		"test.yaml:1:7: name must not be empty",
		"test.yaml:2:14: repetitions must be at least 1",
		`test.yaml:3:9: warmup must be an integer, got "x"`,
		"test.yaml:4:10: timeout must be positive",
		`test.yaml:5:7: seed must be an integer, got "many"`,
		`test.yaml:8:27: level "host" of network appears twice`,
		`test.yaml:9:22: baseline names level "kvm" of platform`,
		`test.yaml:11:55: parameter max_prime of cpu: 1 is out of range`,
		`test.yaml:11:58: unknown parameter "bogus" for cpu.primes`,
		`test.yaml:12:22: unknown workload type "disk.nope"`,
	}
	if len(got) != len(want) {
		t.Fatalf("want %d problems, got %d:\n%s", len(want), len(got), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n   got %s\n  want %s...", i+1, got[i], want[i])
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml", nil, testMachine)
	if err == nil || !strings.Contains(err.Error(), "reading experiment file") {
		t.Fatalf("Load of a missing file: got %v", err)
	}
	var ps Problems
	if errors.As(err, &ps) {
		t.Errorf("a missing file is not a Problems error")
	}
}

// The native+bridge problem suggests an exclusion; adding it must make the
// file valid (it names the factors that placed the role, or only the network
// when native is the default).
func TestNativeBridgeSuggestionWorks(t *testing.T) {
	tests := []struct {
		file     string
		existing string // exclude items the file already has
	}{
		{"testdata/bad/native_bridge.yaml", ""},
		{"testdata/bad/native_bridge_server.yaml", ""},
		{"testdata/bad/native_bridge_role.yaml", "{network: bridge, server.platform: docker}, "},
	}
	suggestion := regexp.MustCompile(`exclude: \[(\{[^}]*\})\]`)
	for _, tc := range tests {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(tc.file, data, nil, testMachine)
		m := suggestion.FindStringSubmatch(fmt.Sprint(err))
		if m == nil {
			t.Errorf("%s: no suggested exclusion in %v", tc.file, err)
			continue
		}
		set := "exclude=[" + tc.existing + m[1] + "]"
		if _, err := Parse(tc.file, data, []string{set}, testMachine); err != nil {
			t.Errorf("%s with the suggested --set %s:\n%v", tc.file, set, err)
		}
	}
}

var updateBad = flag.Bool("update", false, "rewrite testdata/bad.golden")

// Every bad file's problems, as printed, are exactly those of
// testdata/bad.golden: the .want files pin what must be said, this pins
// every word, so a change of how validation decides cannot change a
// message unnoticed.
func TestBadFilesGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, file := range files {
		_, err := Load(file, nil, testMachine)
		fmt.Fprintf(&b, "== %s\n%v\n", file, err)
	}
	if *updateBad {
		if err := os.WriteFile("testdata/bad.golden", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("testdata/bad.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		for i := range min(len(wl), len(gl)) {
			if wl[i] != gl[i] {
				t.Fatalf("line %d:\n want %s\n  got %s", i+1, wl[i], gl[i])
			}
		}
		t.Fatalf("want %d lines, got %d", len(wl), len(gl))
	}
}
