package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const withProfiles = `name: profiled
seed: 7
repetitions: 3
factors:
  platform: [native, docker]
workloads:
  - {name: cpu, type: cpu.primes, params: {max_prime: 20000, duration: 3s}}
profiles:
  quick:                                  # a smoke run
    repetitions: 2                        # fewest that still gives a spread
    warmup: 0
    workloads.cpu.params.duration: 1s
  wide:
    factors.platform: [native, docker, podman]
    workloads.cpu.params: {max_prime: 40000, threads: 2}
  empty: {}
`

func parseWith(t *testing.T, text string, o Options) *Experiment {
	t.Helper()
	if o.Machine.CPUs == 0 && o.Machine.MemBytes == 0 && !o.Machine.NoBlkioWeight && o.Machine.Image == nil {
		o.Machine = testMachine
	}
	e, err := ParseWith("test.yaml", []byte(text), o)
	if err != nil {
		t.Fatalf("ParseWith(%+v): %v", o, err)
	}
	return e
}

// A profile's overrides apply first, then --set's; the stored text names
// the profile and lists every override in that order, and Reload (what
// --resume does) plans the same cells and order from it.
func TestProfileApplied(t *testing.T) {
	e := parseWith(t, withProfiles, Options{Profile: "quick", Sets: []string{"repetitions=4"}})
	w, _ := e.Workload("cpu")
	if e.Repetitions != 4 || e.Warmup != 0 || w.Params["duration"] != "1s" || w.Params["max_prime"] != "20000" {
		t.Errorf("repetitions %d, warmup %d, params %v", e.Repetitions, e.Warmup, w.Params)
	}
	name, sets := e.Profile()
	wantSets := []string{"repetitions=2", "warmup=0", "workloads.cpu.params.duration=1s", "repetitions=4"}
	if name != "quick" || !reflect.DeepEqual(sets, wantSets) {
		t.Errorf("Profile() = %q, %q", name, sets)
	}
	if !strings.Contains(e.Text, "\n# --profile quick\n# --set repetitions=2\n") || !strings.HasPrefix(e.Text, withProfiles) {
		t.Errorf("stored text:\n%s", e.Text)
	}
	if got := e.Profiles(); !reflect.DeepEqual(got, []string{"quick", "wide", "empty"}) {
		t.Errorf("Profiles() = %q", got)
	}
	r, err := Reload("test.yaml", e.Text, e.Seed, testMachine)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Cells(), e.Cells()) || r.Repetitions != 4 || r.Warmup != 0 {
		t.Errorf("reloaded: %d repetitions, %d warm-up, cells %v", r.Repetitions, r.Warmup, r.Cells())
	}
	if r.Text != e.Text {
		t.Errorf("the reloaded text differs:\n%s\n--- was:\n%s", r.Text, e.Text)
	}
	// A calibration appends its repetitions to the stored text.
	c, err := Reload("test.yaml", e.Text+"\n# --set repetitions=10", e.Seed, testMachine)
	if err != nil || c.Repetitions != 10 || c.Warmup != 0 {
		t.Fatalf("calibration's reload: %v", err)
	}
	if name, _ := c.Profile(); name != "quick" {
		t.Errorf("calibration's profile %q", name)
	}
}

// A profile's values may be any YAML, written on one line as --set takes
// them; an empty profile changes nothing but is recorded.
func TestProfileValues(t *testing.T) {
	e := parseWith(t, withProfiles, Options{Profile: "wide"})
	if got := factorLevels(e, "platform"); !reflect.DeepEqual(got, []string{"native", "docker", "podman"}) {
		t.Errorf("platform levels %v", got)
	}
	if w, _ := e.Workload("cpu"); w.Params["max_prime"] != "40000" || w.Params["threads"] != "2" || w.Params["duration"] != "5s" {
		t.Errorf("params %v (the mapping replaces the file's)", w.Params)
	}
	if _, sets := e.Profile(); !reflect.DeepEqual(sets, []string{"factors.platform=[native, docker, podman]", "workloads.cpu.params={max_prime: 40000, threads: 2}"}) {
		t.Errorf("sets %q", sets)
	}
	e = parseWith(t, withProfiles, Options{Profile: "empty"})
	if name, sets := e.Profile(); name != "empty" || len(sets) != 0 || e.Repetitions != 3 {
		t.Errorf("empty profile: %q %q, %d repetitions", name, sets, e.Repetitions)
	}
	plain := parseWith(t, withProfiles, Options{})
	if name, _ := plain.Profile(); name != "" || plain.Repetitions != 3 || strings.Contains(plain.Text, setMarker) {
		t.Errorf("without a profile: %q, %d repetitions, text:\n%s", name, plain.Repetitions, plain.Text)
	}
	for _, tc := range []struct{ yaml, text string }{
		{"1s", "1s"},
		{`"3"`, `"3"`},
		{"[a, b]", "[a, b]"},
		{"\n  - a\n  - {b: 1}", "[a, {b: 1}]"},
		{"|\n  two\n  lines", `"two\nlines"`},
		{"", ""},
	} {
		var n = mustNode(t, "k: "+tc.yaml)
		if got, err := valueText(n); err != nil || got != tc.text {
			t.Errorf("valueText(%q) = %q, %v; want %q", tc.yaml, got, err, tc.text)
		}
	}
}

// A profile that names no profile of the file is an error of its own (a
// usage error on the command line) listing the file's profiles.
func TestProfileUnknown(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{withProfiles, "--profile paper: test.yaml has no such profile; its profiles: quick, wide, empty"},
		{cpuOnly, "--profile paper: test.yaml has no profiles"},
	} {
		_, err := ParseWith("test.yaml", []byte(tc.file), Options{Profile: "paper", Machine: testMachine})
		var pe *ProfileError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// Every profile is validated with the file, chosen or not; a problem of
// an entry is reported at the entry, once, also when it is chosen.
func TestProfileProblems(t *testing.T) {
	bad := withProfiles + "  broken:\n    warmup: -1\n"
	for _, profile := range []string{"", "quick", "broken"} {
		_, err := ParseWith("test.yaml", []byte(bad), Options{Profile: profile, Machine: testMachine})
		var ps Problems
		if !errors.As(err, &ps) || len(ps) != 1 {
			t.Fatalf("--profile %q: want one problem, got %v", profile, err)
		}
		p := ps[0]
		want := Problem{File: "test.yaml", Line: 18, Col: 5, Profile: "broken", Entry: "warmup=-1", Msg: "warmup must be at least 0, got -1"}
		if p != want {
			t.Errorf("--profile %q: got %+v\nwant %+v", profile, p, want)
		}
		if s := p.String(); s != "test.yaml:18:5: profile broken, warmup=-1: warmup must be at least 0, got -1" {
			t.Errorf("printed %q", s)
		}
	}
	// Problems the file has without any profile are reported once, not
	// again for each profile.
	got := problemsOf(t, strings.Replace(withProfiles, "repetitions: 3", "repetitions: 0", 1))
	if len(got) != 1 || !strings.HasPrefix(got[0], "test.yaml:3:14: repetitions must be at least 1") {
		t.Errorf("got %q", got)
	}
	oneProblem(t, withProfiles, []string{"profiles.quick.repetitions=9"}, "--set profiles.quick.repetitions=9: profiles are chosen (--profile NAME), not overridden")
	anchored := strings.Replace(withProfiles, "platform: [native, docker]", "platform: &x [native, docker]", 1)
	oneProblem(t, anchored+"  anchored:\n    factors.platform: *x\n", nil, "test.yaml:18:23: profile anchored, factors.platform: *x: a profile's value is recorded as --set text")
	oneProblem(t, withProfiles+"  twice:\n    warmup: 1\n    warmup: 2\n", nil, "test.yaml:19:5: profile twice: warmup appears twice")
	oneProblem(t, withProfiles+"profiles: {}\n", nil, `test.yaml:17:1: key "profiles" appears twice`)
	oneProblem(t, "name: x\nworkloads: [{type: cpu.primes}]\nprofiles: [quick]\n", nil, "test.yaml:3:11: profiles must be a mapping of profile names to overrides")
}

// A profile may ask for a larger machine than this one: validated against
// everything but the machine's size, with a note; a run with it is
// refused, a dry run plans it with warnings.
func TestProfileMachineSize(t *testing.T) {
	file := withProfiles + "  paper:\n    factors.cpus: [1, 4]\n"
	e := parseWith(t, file, Options{})
	if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], `test.yaml:18:5: profile paper, factors.cpus=[1, 4]: level "4" of cpus: this machine has only 2 cores; `+"`run --profile paper` would refuse it here") {
		t.Errorf("notes %q", e.Notes)
	}
	if _, err := ParseWith("test.yaml", []byte(file), Options{Profile: "paper", Machine: testMachine}); err == nil ||
		err.Error() != `test.yaml:18:5: profile paper, factors.cpus=[1, 4]: level "4" of cpus: this machine has only 2 cores` {
		t.Errorf("a run with the profile: %v", err)
	}
	// The machine unknown: nothing to say.
	if e, err := ParseWith("test.yaml", []byte(file), Options{}); err != nil || len(e.Notes) != 0 {
		t.Errorf("unknown machine: %v, notes %q", err, e.Notes)
	}
	path := filepath.Join(t.TempDir(), "exp.yaml")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	e, warnings, err := LoadForPlan(path, Options{Profile: "paper", Machine: testMachine})
	if err != nil || len(e.Cells()) != 4 || len(warnings) != 1 || !strings.Contains(warnings[0], "this machine has only 2 cores; `run --profile paper` would refuse it here") {
		t.Errorf("dry run: %v, warnings %q", err, warnings)
	}
	// Without a profile a dry run checks the machine as a run does.
	if _, _, err := LoadForPlan(path, Options{Sets: []string{"factors.cpus=[4]"}, Machine: testMachine}); err == nil {
		t.Errorf("a dry run of --set factors.cpus=[4] on 2 cores was accepted")
	}
}

func mustNode(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0].Content[1]
}
