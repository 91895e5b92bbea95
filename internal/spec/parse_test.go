package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

const quickstart = "../../experiments/quickstart.yaml"

func TestQuickstart(t *testing.T) {
	e, err := Load(quickstart, nil, testMachine)
	if err != nil {
		t.Fatalf("quickstart.yaml: %v", err)
	}
	data, err := os.ReadFile(quickstart)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "quickstart" || !strings.HasPrefix(e.Description, "native vs docker") {
		t.Errorf("name/description = %q / %q", e.Name, e.Description)
	}
	if e.Seed != 42 || !e.SeedGiven {
		t.Errorf("seed = %d (given %v), want 42 given", e.Seed, e.SeedGiven)
	}
	if e.Repetitions != 3 || e.Warmup != 1 || e.Timeout != 60*time.Second {
		t.Errorf("repetitions/warmup/timeout = %d/%d/%s", e.Repetitions, e.Warmup, e.Timeout)
	}
	wantFactors := []Factor{{Name: "platform", Levels: []string{"native", "docker"}}, {Name: "network", Levels: []string{"host", "bridge"}}}
	if !reflect.DeepEqual(e.Factors, wantFactors) {
		t.Errorf("factors = %v, want %v", e.Factors, wantFactors)
	}
	if want := []map[string]string{{"platform": "native", "network": "bridge"}}; !reflect.DeepEqual(e.Exclude, want) {
		t.Errorf("exclude = %v, want %v", e.Exclude, want)
	}
	if want := map[string]string{"platform": "native", "network": "host"}; !reflect.DeepEqual(e.Baseline, want) {
		t.Errorf("baseline = %v, want %v", e.Baseline, want)
	}
	if len(e.Workloads) != 2 {
		t.Fatalf("want 2 workloads, got %d", len(e.Workloads))
	}
	cpu, tcp := e.Workloads[0], e.Workloads[1]
	if cpu.Name != "cpu" || cpu.Type != "cpu.primes" || cpu.Spec == nil || cpu.Spec.Type != "cpu.primes" {
		t.Errorf("workload 0 = %s %s %v", cpu.Name, cpu.Type, cpu.Spec)
	}
	if want := map[string]string{"max_prime": "20000", "threads": "1", "duration": "3s"}; !reflect.DeepEqual(map[string]string(cpu.Params), want) {
		t.Errorf("cpu params = %v, want %v", cpu.Params, want)
	}
	if tcp.Name != "tcp" || tcp.Type != "net.tcp_stream" || tcp.Spec == nil {
		t.Errorf("workload 1 = %s %s", tcp.Name, tcp.Type)
	}
	if want := map[string]string{"duration": "3s", "message_size": "131072"}; !reflect.DeepEqual(map[string]string(tcp.Params), want) {
		t.Errorf("tcp params = %v, want %v", tcp.Params, want)
	}
	if e.Path != quickstart || e.Text != string(data) {
		t.Errorf("Path = %q; Text equal to the file: %v", e.Path, e.Text == string(data))
	}
	if got := len(e.Cells()); got != 6 {
		t.Errorf("quickstart has %d cells, want 6 (2 workloads x 3 placements)", got)
	}
}

func TestDefaults(t *testing.T) {
	e := parse(t, `name: defaults
workloads:
  - type: cpu.primes
`)
	if DefaultRepetitions != 3 || DefaultWarmup != 0 || DefaultTimeout != 5*time.Minute {
		t.Errorf("defaults changed: %d %d %s", DefaultRepetitions, DefaultWarmup, DefaultTimeout)
	}
	if e.Repetitions != 3 {
		t.Errorf("repetitions = %d, want 3", e.Repetitions)
	}
	if e.Warmup != 0 {
		t.Errorf("warmup = %d, want 0", e.Warmup)
	}
	if e.Timeout != 5*time.Minute {
		t.Errorf("timeout = %s, want 5m", e.Timeout)
	}
	if e.Description != "" || e.Factors != nil || e.Exclude != nil || len(e.Baseline) != 0 {
		t.Errorf("want no description/factors/exclude/baseline, got %q %v %v %v", e.Description, e.Factors, e.Exclude, e.Baseline)
	}
	w := e.Workloads[0]
	if w.Name != "cpu.primes" {
		t.Errorf("a workload without a name is named by its type, got %q", w.Name)
	}
	if want := map[string]string{"max_prime": "10000", "threads": "1", "duration": "5s"}; !reflect.DeepEqual(map[string]string(w.Params), want) {
		t.Errorf("default params = %v, want %v", w.Params, want)
	}
	cells := e.Cells()
	if len(cells) != 1 || len(cells[0].Factors) != 0 || cells[0].ID != 1 {
		t.Errorf("no factors: want one cell with no factor levels, got %+v", cells)
	}
}

func TestSeedDrawnWhenAbsent(t *testing.T) {
	seeds := map[int64]bool{}
	for i := 0; i < 5; i++ {
		e := parse(t, cpuOnly)
		if e.SeedGiven {
			t.Fatalf("SeedGiven is true for a file without a seed")
		}
		if e.Seed < 0 || e.Seed >= 1<<31 {
			t.Errorf("drawn seed %d out of [0, 2^31)", e.Seed)
		}
		seeds[e.Seed] = true
	}
	if len(seeds) < 2 {
		t.Errorf("5 parses drew the same seed %v: is a seed drawn at all?", seeds)
	}
	e := parse(t, "seed: 0\n"+cpuOnly)
	if !e.SeedGiven || e.Seed != 0 {
		t.Errorf("seed: 0 → Seed %d given %v, want 0 given", e.Seed, e.SeedGiven)
	}
}

func TestNameDefaultsToTheFile(t *testing.T) {
	text := []byte("workloads:\n  - {type: cpu.primes}\n")
	e, err := Parse("dir/my-service.v2.yaml", text, nil, Machine{CPUs: 2, MemBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "my-service.v2" {
		t.Errorf("a file without name: is named %q, want its base name my-service.v2", e.Name)
	}
	if _, err := Parse("", text, nil, Machine{CPUs: 2, MemBytes: 1 << 30}); err == nil || !strings.Contains(err.Error(), `missing key "name"`) {
		t.Errorf("text with no file and no name: got %v, want the missing name refused", err)
	}
}

func TestParamsNormalised(t *testing.T) {
	e := parse(t, `name: normalise
workloads:
  - name: cpu
    type: cpu.primes
    params: {duration: 1500ms, threads: "4", max_prime: 300}
  - name: cpu2
    type: cpu.primes
    params: {duration: 2m}
  - name: tcp
    type: net.tcp_stream
    params: {duration: 0.5s, message_size: 64KiB}
  - name: tcp2
    type: net.tcp_stream
    params: {message_size: 1MB}
  - name: iperf
    type: net.iperf3
    params: {protocol: udp, length: 1.5KiB, duration: 90s}
`)
	want := map[string]map[string]string{
		"cpu":   {"duration": "1.5s", "threads": "4", "max_prime": "300"},
		"cpu2":  {"duration": "2m0s", "threads": "1", "max_prime": "10000"},
		"tcp":   {"duration": "500ms", "message_size": "65536"},
		"tcp2":  {"duration": "5s", "message_size": "1000000"},
		"iperf": {"protocol": "udp", "length": "1536", "duration": "1m30s", "parallel": "1", "bitrate": "1G"},
	}
	for name, params := range want {
		w, ok := e.Workload(name)
		if !ok {
			t.Fatalf("no workload %s", name)
		}
		if !reflect.DeepEqual(map[string]string(w.Params), params) {
			t.Errorf("%s params = %v, want %v", name, w.Params, params)
		}
	}
	if _, ok := e.Workload("nope"); ok {
		t.Errorf("Workload(nope) found something")
	}
}

func TestSingleLevelAndFactorOrder(t *testing.T) {
	e := parse(t, `name: order
factors:
  network: host
  platform: [docker, native]
  cpus: [none, 0.5, 2]
  cpuset: [none, "0", "0-1", "0,1"]
  memory: [none, 6MiB, 1GiB]
workloads:
  - {type: cpu.primes}
`)
	want := []Factor{
		{Name: "network", Levels: []string{"host"}},
		{Name: "platform", Levels: []string{"docker", "native"}},
		{Name: "cpus", Levels: []string{"none", "0.5", "2"}},
		{Name: "cpuset", Levels: []string{"none", "0", "0-1", "0,1"}},
		{Name: "memory", Levels: []string{"none", "6MiB", "1GiB"}},
	}
	if !reflect.DeepEqual(e.Factors, want) {
		t.Errorf("factors = %v\nwant %v", e.Factors, want)
	}
}

func TestMachineLimitsUnknown(t *testing.T) {
	// With nothing known of the machine only the fixed bounds apply.
	text := `name: big
factors:
  cpus: [64]
  cpuset: ["0-63"]
  memory: [1TiB]
workloads:
  - {type: cpu.primes}
`
	if _, err := Parse("big.yaml", []byte(text), nil, Machine{}); err != nil {
		t.Errorf("unknown machine: %v", err)
	}
	if _, err := Parse("big.yaml", []byte(text), nil, testMachine); err == nil {
		t.Errorf("2-CPU 8GiB machine accepted 64 cores, CPUs 0-63 and 1TiB")
	}
}

func TestText(t *testing.T) {
	data, err := os.ReadFile(quickstart)
	if err != nil {
		t.Fatal(err)
	}
	sets := []string{"repetitions=5", "workloads.cpu.params.threads=2"}
	e, err := Parse(quickstart, data, sets, testMachine)
	if err != nil {
		t.Fatal(err)
	}
	want := string(data) + "\n# ctrbench: --set overrides, as given on the command line:\n# --set repetitions=5\n# --set workloads.cpu.params.threads=2"
	if e.Text != want {
		t.Errorf("Text = %q\nwant %q", e.Text, want)
	}
	if !strings.HasPrefix(e.Text, string(data)) {
		t.Errorf("Text does not start with the file")
	}
	// The overrides are comments: the text parses back to the file's values.
	again := parse(t, e.Text)
	if again.Repetitions != 3 {
		t.Errorf("Text re-parsed has repetitions %d, want the file's 3", again.Repetitions)
	}
}

func TestYAMLWithoutLine(t *testing.T) {
	oneProblem(t, "name: *nope\nworkloads: [{type: cpu.primes}]\n", nil, "test.yaml: not valid YAML: unknown anchor 'nope'")
}

// A report reads the adaptive target back from the stored text, --set
// trailer included.
func TestAdaptiveOf(t *testing.T) {
	e := parse(t, "name: a\nrepetitions: {min: 3, max: 30, rci: 2%}\nworkloads: [{type: cpu.primes}]\n", "repetitions.rci=5%")
	a := AdaptiveOf(e.Text)
	if a == nil || a.Min != 3 || a.Max != 30 || a.RCI != 0.05 {
		t.Fatalf("%+v from %q", a, e.Text)
	}
	if AdaptiveOf(parse(t, "name: f\nworkloads: [{type: cpu.primes}]\n").Text) != nil {
		t.Error("fixed repetitions read as adaptive")
	}
}

// Found by FuzzParse: a file whose own comments begin "# --set" (S2's
// documents an override) was read back with them as overrides, so resuming
// its campaign failed. Texts stored before the marker (overrides in a
// trailing block) still read back.
func TestReloadKeepsCommentsThatLookLikeOverrides(t *testing.T) {
	data, err := os.ReadFile("../../experiments/kratzke2015.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sets := range [][]string{nil, {"repetitions=2"}} {
		e, err := Parse("kratzke2015.yaml", data, sets, testMachine)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Reload(e.Path, e.Text, e.Seed, testMachine)
		if err != nil || back.Repetitions != e.Repetitions || len(back.Cells()) != len(e.Cells()) {
			t.Fatalf("sets %v: %v", sets, err)
		}
	}
	old := "name: o\nworkloads: [{type: cpu.primes}]\n\n# --set repetitions=7\n# --set seed=3"
	back, err := Reload("o.yaml", old, 3, testMachine)
	if err != nil || back.Repetitions != 7 {
		t.Fatalf("a text stored before the marker: %v %+v", err, back)
	}
}

// The underlay's rate is read by the one rate parser the shaper uses:
// what the file's check accepts, the lab can shape (they once disagreed
// on "10mbps", bytes per second in tc's spelling).
func TestUnderlayRateOneParser(t *testing.T) {
	ok := "name: u\nfactors:\n  hosts: [2]\n  underlay: [none, 1gbit, 10mbps, 500kbit]\nworkloads: [{type: cpu.primes}]\n"
	e, err := Parse("u.yaml", []byte(ok), nil, Machine{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"none": 0, "1gbit": 125_000_000, "10mbps": 10_000_000, "500kbit": 62_500}
	for _, c := range e.Cells() {
		lv, err := e.LevelsOf(c)
		if w, known := want[c.Factors[vocab.FUnderlay]]; err != nil || !known || lv.Underlay.Rate.BytesPerSec() != w {
			t.Errorf("cell %s: underlay %d, %v", c.Key(), lv.Underlay.Rate.BytesPerSec(), err)
		}
	}
	bad := "name: u\nfactors:\n  hosts: [2]\n  underlay: [fast]\nworkloads: [{type: cpu.primes}]\n"
	if _, err := Parse("u.yaml", []byte(bad), nil, Machine{}); err == nil || !strings.Contains(err.Error(), `u.yaml:4:`) || !strings.Contains(err.Error(), "a rate such as 100mbit") {
		t.Errorf("underlay fast: %v", err)
	}
}

// An underlay level may be the mapping of its parts, one or a list; it
// reads as the words a string level spells, and --set takes either.
func TestUnderlayMapping(t *testing.T) {
	text := `name: u
factors:
  hosts: [2]
  underlay: [1gbit, {rate: 1gbit, delay: 24ms, jitter: 2ms, loss: 0.1%}]
workloads: [{type: net.tcp_rr}]
`
	e, err := Parse("u.yaml", []byte(text), nil, Machine{})
	if err != nil {
		t.Fatal(err)
	}
	var levels []string
	for _, c := range e.Cells() {
		levels = append(levels, c.Factors[vocab.FUnderlay])
	}
	if want := []string{"1gbit", "1gbit delay 24ms jitter 2ms loss 0.1%"}; !slices.Equal(levels, want) {
		t.Errorf("levels %q, want %q", levels, want)
	}
	one, err := Parse("u.yaml", []byte(text), []string{"factors.underlay={rate: 100mbit, delay: 10ms}"}, Machine{})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Cells()[0].Factors[vocab.FUnderlay]; len(one.Cells()) != 1 || got != "100mbit delay 10ms" {
		t.Errorf("--set of one mapping: %d cells, %q", len(one.Cells()), got)
	}
	for bad, want := range map[string]string{
		"{rate: 1gbit, latency: 2ms}":   `u.yaml:4:27: underlay: unknown part "latency"; allowed: rate, delay, jitter, loss`,
		"{delay: 2ms}":                  "needs a rate",
		"[{rate: 1gbit, delay: [1ms]}]": "underlay's delay",
	} {
		t2 := strings.Replace(text, "[1gbit, {rate: 1gbit, delay: 24ms, jitter: 2ms, loss: 0.1%}]", bad, 1)
		if _, err := Parse("u.yaml", []byte(t2), nil, Machine{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", bad, err, want)
		}
	}
}

// A file larger than MaxFileSize is refused before it is read whole: its
// size, not its content, is the problem.
func TestLoadRefusesAHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("name: huge\ndescription: \"" + strings.Repeat("x", MaxFileSize) + "\"\nworkloads: [{type: cpu.primes}]\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path, nil, Machine{})
	if err == nil || !strings.Contains(err.Error(), "the file is larger than 4 MiB") {
		t.Errorf("got %v", err)
	}
}
