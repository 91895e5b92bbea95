package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/baseline"
	"github.com/ctrbench/ctrbench/internal/result"
)

func keys(cells []result.Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Key()
	}
	return out
}

func checkIDs(t *testing.T, cells []result.Cell) {
	t.Helper()
	for i, c := range cells {
		if c.ID != i+1 {
			t.Errorf("cell %d has ID %d, want %d (1-based, in order)", i, c.ID, i+1)
		}
	}
}

func TestCellsFullFactorial(t *testing.T) {
	e := parse(t, `name: factorial
factors:
  platform: [native, docker]
  network: [host, bridge]
  cpus: [none, 1]
exclude:
  - {platform: native, network: bridge}
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream, params: {message_size: 4KiB}}
`)
	cells := e.Cells()
	var want []string
	for _, w := range []string{"cpu", "tcp"} {
		want = append(want,
			w+" cpus=none network=host platform=native",
			w+" cpus=1 network=host platform=native",
			w+" cpus=none network=host platform=docker",
			w+" cpus=1 network=host platform=docker",
			w+" cpus=none network=bridge platform=docker",
			w+" cpus=1 network=bridge platform=docker",
		)
	}
	if got := keys(cells); !reflect.DeepEqual(got, want) {
		t.Errorf("cells:\n got %q\nwant %q", got, want)
	}
	checkIDs(t, cells)
	for _, c := range cells {
		if len(c.Factors) != 3 {
			t.Errorf("cell %s has factors %v", c.Key(), c.Factors)
		}
		w, _ := e.Workload(c.Workload)
		if c.WorkloadType != w.Type || !reflect.DeepEqual(c.Params, map[string]string(w.Params)) {
			t.Errorf("cell %s: type %s params %v, want %s %v", c.Key(), c.WorkloadType, c.Params, w.Type, w.Params)
		}
	}
	// Cells own their maps: changing one changes neither the workload nor
	// another call's cells.
	cells[0].Params["threads"] = "99"
	if w, _ := e.Workload("cpu"); w.Params["threads"] != "1" {
		t.Errorf("a cell's Params aliases the workload's")
	}
	again := e.Cells()
	if !reflect.DeepEqual(keys(again), want) || again[0].Params["threads"] != "1" {
		t.Errorf("Cells is not stable across calls")
	}
	// Stable across parses too (IDs are persisted in the database).
	e2 := parse(t, e.Text)
	if got := e2.Cells(); !reflect.DeepEqual(got, again) {
		t.Errorf("cells differ between two parses of the same text")
	}
}

func TestCellKey(t *testing.T) {
	c := result.Cell{Workload: "tcp", Factors: map[string]string{"platform": "docker", "param.message_size": "1KiB", "network": "host"}}
	if got, want := c.Key(), "tcp network=host param.message_size=1KiB platform=docker"; got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
	for i := 0; i < 20; i++ {
		if c.Key() != "tcp network=host param.message_size=1KiB platform=docker" {
			t.Fatal("Key() is not stable")
		}
	}
	if got := (result.Cell{Workload: "cpu", Factors: map[string]string{}}).Key(); got != "cpu " {
		t.Errorf("Key() with no factors = %q", got)
	}
}

func TestCellsParamFactor(t *testing.T) {
	e := parse(t, `name: sizes
factors:
  platform: [native, docker]
  param.message_size: [1KiB, 64KiB, "1000"]
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream, params: {message_size: 8KiB}}
`)
	cells := e.Cells()
	want := []string{
		"cpu platform=native",
		"cpu platform=docker",
		"tcp param.message_size=1KiB platform=native",
		"tcp param.message_size=64KiB platform=native",
		"tcp param.message_size=1000 platform=native",
		"tcp param.message_size=1KiB platform=docker",
		"tcp param.message_size=64KiB platform=docker",
		"tcp param.message_size=1000 platform=docker",
	}
	if got := keys(cells); !reflect.DeepEqual(got, want) {
		t.Fatalf("cells:\n got %q\nwant %q", got, want)
	}
	checkIDs(t, cells)
	for _, c := range cells[:2] {
		if _, ok := c.Factors["param.message_size"]; ok {
			t.Errorf("cpu cell has the message_size factor: %v", c.Factors)
		}
		if _, ok := c.Params["message_size"]; ok {
			t.Errorf("cpu cell has a message_size parameter: %v", c.Params)
		}
	}
	sizes := map[string]string{"1KiB": "1024", "64KiB": "65536", "1000": "1000"}
	for _, c := range cells[2:] {
		lvl := c.Factors["param.message_size"]
		if c.Params["message_size"] != sizes[lvl] {
			t.Errorf("cell %s: message_size param %q, want %q (the level, normalised)", c.Key(), c.Params["message_size"], sizes[lvl])
		}
		if c.Params["duration"] != "5s" {
			t.Errorf("cell %s: other params lost: %v", c.Key(), c.Params)
		}
	}
	// The workload's own value is untouched.
	if w, _ := e.Workload("tcp"); w.Params["message_size"] != "8192" {
		t.Errorf("tcp workload message_size = %q", w.Params["message_size"])
	}
}

func TestCellsParamFactorShared(t *testing.T) {
	// duration is a parameter of every workload: each gets the factor, each
	// normalises the level itself.
	e := parse(t, `name: durations
factors:
  param.duration: [2s, 1500ms]
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: iperf, type: net.iperf3}
`)
	cells := e.Cells()
	want := []string{"cpu param.duration=2s", "cpu param.duration=1500ms", "iperf param.duration=2s", "iperf param.duration=1500ms"}
	if got := keys(cells); !reflect.DeepEqual(got, want) {
		t.Fatalf("cells %q, want %q", got, want)
	}
	if cells[1].Params["duration"] != "1.5s" || cells[3].Params["duration"] != "1.5s" {
		t.Errorf("duration not normalised: %v %v", cells[1].Params, cells[3].Params)
	}
}

func TestCellsParamFactorExcluded(t *testing.T) {
	// Excluding a parameter level removes it from the workloads that have the
	// parameter; the others keep one cell per remaining combination.
	e := parse(t, `name: sizes
factors:
  platform: [native, docker]
  param.message_size: [1KiB, 64KiB]
exclude:
  - {platform: docker, param.message_size: 1KiB}
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream}
`)
	want := []string{
		"cpu platform=native",
		"cpu platform=docker",
		"tcp param.message_size=1KiB platform=native",
		"tcp param.message_size=64KiB platform=native",
		"tcp param.message_size=64KiB platform=docker",
	}
	if got := keys(e.Cells()); !reflect.DeepEqual(got, want) {
		t.Errorf("cells %q, want %q", got, want)
	}
}

func TestCellsRoleFactors(t *testing.T) {
	e := parse(t, `name: roles
factors:
  server.platform: [native, docker]
  client.cpus: [none, 1]
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream}
  - {name: iperf, type: net.iperf3}
`)
	cells := e.Cells()
	var want []string
	want = append(want, "cpu ")
	for _, w := range []string{"tcp", "iperf"} {
		want = append(want,
			w+" client.cpus=none server.platform=native",
			w+" client.cpus=1 server.platform=native",
			w+" client.cpus=none server.platform=docker",
			w+" client.cpus=1 server.platform=docker",
		)
	}
	if got := keys(cells); !reflect.DeepEqual(got, want) {
		t.Errorf("cells %q\nwant %q", got, want)
	}
	checkIDs(t, cells)
	if len(cells[0].Factors) != 0 {
		t.Errorf("cpu cell has role factors: %v", cells[0].Factors)
	}
}

func TestBaselineOf(t *testing.T) {
	e, err := Load(quickstart, nil, testMachine)
	if err != nil {
		t.Fatal(err)
	}
	cells := e.Cells()
	byKey := map[string]int{}
	for _, c := range cells {
		byKey[c.Key()] = c.ID
	}
	want := map[string]string{
		"cpu network=host platform=native":   "cpu network=host platform=native",
		"cpu network=host platform=docker":   "cpu network=host platform=native",
		"cpu network=bridge platform=docker": "cpu network=host platform=native",
		"tcp network=host platform=native":   "tcp network=host platform=native",
		"tcp network=host platform=docker":   "tcp network=host platform=native",
		"tcp network=bridge platform=docker": "tcp network=host platform=native",
	}
	if len(cells) != len(want) {
		t.Fatalf("cells %q", keys(cells))
	}
	for _, c := range cells {
		id, ok := e.BaselineOf(c, cells)
		if !ok || id != byKey[want[c.Key()]] {
			t.Errorf("BaselineOf(%s) = %d %v, want %d (%s)", c.Key(), id, ok, byKey[want[c.Key()]], want[c.Key()])
		}
	}
}

func TestBaselineSubset(t *testing.T) {
	e := parse(t, `name: subset
factors:
  platform: [native, docker]
  cpus: [none, 1]
  server.platform: [native, docker]
exclude:
  - {platform: native, cpus: 1}
baseline: {platform: native}
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream}
`)
	cells := e.Cells()
	id := map[string]int{}
	for _, c := range cells {
		id[c.Key()] = c.ID
	}
	tests := []struct {
		cell, base string // base "" means no baseline cell
	}{
		{"cpu cpus=none platform=native", "cpu cpus=none platform=native"},
		{"cpu cpus=none platform=docker", "cpu cpus=none platform=native"},
		{"cpu cpus=1 platform=docker", ""}, // native with 1 cpu is excluded
		{"tcp cpus=none platform=docker server.platform=docker", "tcp cpus=none platform=native server.platform=docker"},
		{"tcp cpus=none platform=native server.platform=docker", "tcp cpus=none platform=native server.platform=docker"},
		{"tcp cpus=1 platform=docker server.platform=native", ""},
	}
	for _, tc := range tests {
		cid, ok := id[tc.cell]
		if !ok {
			t.Fatalf("no cell %q among %q", tc.cell, keys(cells))
		}
		got, found := e.BaselineOf(cells[cid-1], cells)
		switch {
		case tc.base == "" && found:
			t.Errorf("BaselineOf(%s) = %d, want none", tc.cell, got)
		case tc.base != "" && (!found || got != id[tc.base]):
			t.Errorf("BaselineOf(%s) = %d %v, want %d (%s)", tc.cell, got, found, id[tc.base], tc.base)
		}
	}
}

func TestBaselineIrrelevantFactor(t *testing.T) {
	// A baseline naming a role factor leaves single-role workloads, which do
	// not have it, as their own baseline.
	e := parse(t, `name: roles
factors:
  server.platform: [native, docker]
baseline: {server.platform: native}
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream}
`)
	cells := e.Cells()
	want := map[int]int{1: 1, 2: 2, 3: 2}
	for _, c := range cells {
		got, ok := e.BaselineOf(c, cells)
		if !ok || got != want[c.ID] {
			t.Errorf("BaselineOf(%s) = %d %v, want %d", c.Key(), got, ok, want[c.ID])
		}
	}
}

func TestNoBaseline(t *testing.T) {
	e := parse(t, `name: none
factors:
  platform: [native, docker]
workloads:
  - {name: cpu, type: cpu.primes}
`)
	cells := e.Cells()
	for _, c := range cells {
		if id, ok := e.BaselineOf(c, cells); ok {
			t.Errorf("BaselineOf(%s) = %d without a baseline", c.Key(), id)
		}
	}
	if _, ok := baseline.Cell(nil, cells[0], cells); ok {
		t.Errorf("baseline.Cell(nil) found a baseline")
	}
	// BaselineCell (used on campaigns read back) agrees with BaselineOf.
	if id, ok := baseline.Cell(map[string]string{"platform": "native"}, cells[1], cells); !ok || id != 1 {
		t.Errorf("BaselineCell = %d %v, want 1", id, ok)
	}
	// It never crosses workloads.
	other := cells[1]
	other.Workload = "tcp"
	if id, ok := baseline.Cell(map[string]string{"platform": "native"}, other, cells); ok {
		t.Errorf("BaselineCell matched cell %d of another workload", id)
	}
}

func TestPlacementFor(t *testing.T) {
	defaults := Placement{Platform: "native", Network: "host", CPUs: "none", Cpuset: "none", Memory: "none", Storage: "layer", BlkioWeight: "none", ReadBps: "none", WriteBps: "none", Pids: "none"}
	if got := placementFor(nil, "main"); got != defaults {
		t.Errorf("no factors: %+v, want %+v", got, defaults)
	}
	levels := map[string]string{
		"platform":        "docker",
		"network":         "bridge",
		"server.platform": "native",
		"server.network":  "host",
		"client.cpus":     "0.5",
		"memory":          "1GiB",
		"server.cpuset":   "0",
		"param.duration":  "1s",
		"client.storage":  "tmpfs",
	}
	tests := []struct {
		role string
		want Placement
	}{
		{"server", Placement{Platform: "native", Network: "host", CPUs: "none", Cpuset: "0", Memory: "1GiB", Storage: "layer", BlkioWeight: "none", ReadBps: "none", WriteBps: "none", Pids: "none"}},
		{"client", Placement{Platform: "docker", Network: "bridge", CPUs: "0.5", Cpuset: "none", Memory: "1GiB", Storage: "tmpfs", BlkioWeight: "none", ReadBps: "none", WriteBps: "none", Pids: "none"}},
		{"main", Placement{Platform: "docker", Network: "bridge", CPUs: "none", Cpuset: "none", Memory: "1GiB", Storage: "layer", BlkioWeight: "none", ReadBps: "none", WriteBps: "none", Pids: "none"}},
	}
	for _, tc := range tests {
		if got := placementFor(levels, tc.role); got != tc.want {
			t.Errorf("placementFor(%s) = %+v, want %+v", tc.role, got, tc.want)
		}
	}
}

// An exclusion or baseline may spell a parameter level differently from the
// factor (1024 for 1KiB); it names the same level.
func TestLevelsMatchByValue(t *testing.T) {
	src := `name: x
factors:
  param.message_size: [1KiB, 64KiB]
exclude:
  - {param.message_size: 1024}
baseline: {param.message_size: "65536"}
workloads:
  - {type: net.tcp_stream}
`
	e, err := Parse("x.yaml", []byte(src), nil, Machine{})
	if err != nil {
		t.Fatal(err)
	}
	cells := e.Cells()
	if len(cells) != 1 || cells[0].Factors["param.message_size"] != "64KiB" {
		t.Fatalf("cells %+v", cells)
	}
	if e.Baseline["param.message_size"] != "64KiB" {
		t.Errorf("baseline %v", e.Baseline)
	}
}

func TestCPUListBounded(t *testing.T) {
	if _, err := parseCPUList("0-2000000000", 0); err == nil || !strings.Contains(err.Error(), "beyond any machine") {
		t.Fatalf("got %v", err)
	}
}

// An exclusion naming a workload drops only that workload's combinations.
func TestExcludeByWorkload(t *testing.T) {
	src := `name: x
factors:
  platform: [native, docker]
  network: [host, bridge]
exclude:
  - {platform: native, network: bridge}
  - {workload: cpu, network: bridge}
workloads:
  - {name: cpu, type: cpu.primes}
  - {name: tcp, type: net.tcp_stream}
`
	e, err := Parse("x.yaml", []byte(src), nil, Machine{})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, c := range e.Cells() {
		n[c.Workload]++
	}
	if n["cpu"] != 2 || n["tcp"] != 3 {
		t.Fatalf("cells per workload %v, want cpu 2, tcp 3", n)
	}
	_, err = Parse("x.yaml", []byte(strings.Replace(src, "{workload: cpu,", "{workload: gpu,", 1)), nil, Machine{})
	if err == nil || !strings.Contains(err.Error(), `x.yaml:7:16: exclude names workload "gpu", which is not among the workloads (cpu, tcp)`) {
		t.Fatalf("got %v", err)
	}
}

// A bundle level that sets a factor the other levels leave out (a nested
// parent's network) still has the baseline the bundle factor names: the
// factor follows the bundle, its absence included.
func TestBaselineBundleWithExtraFactor(t *testing.T) {
	e := parse(t, `name: bundles
factors:
  entity:
    bare-metal: {platform: native}
    nested: {platform: nested}
    nested-host-parent: {platform: nested, parent.network: host}
  cpus: [none, 1]
baseline: {entity: bare-metal}
workloads:
  - {name: cpu, type: cpu.primes}
`)
	cells := e.Cells()
	for _, c := range cells {
		got, ok := e.BaselineOf(c, cells)
		want := c.Factors["cpus"]
		if !ok || cells[got-1].Factors["entity"] != "bare-metal" || cells[got-1].Factors["cpus"] != want {
			t.Errorf("BaselineOf(%s) = %d %v, want bare-metal at cpus %s", c.Key(), got, ok, want)
		}
	}
}
