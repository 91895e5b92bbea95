package plan

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/spec"
)

// Issue 39: every fix an error message suggests works. A suggestion is a
// message that proposes a change to the file ("set X: Y", "use Z",
// "exclude that combination", "add …", "give …", an example to write);
// each is applied here as a user would, and the file must then validate
// — as run --dry-run validates it: spec.Parse, then ResolveAll — or its
// next problem must be another one, named by the case.

// suggestion is one message's suggested fix, applied.
type suggestion struct {
	name string // what the message suggests, for failures
	// file is the experiment's text, or "bad:NAME" for
	// internal/spec/testdata/bad/NAME.yaml. {image} in it is the path of
	// an image with a program, /bin/app, and no command (noCommandImage).
	file string
	// machine validation checks levels against; zero: suggestMachine.
	machine spec.Machine
	// want is a substring of the message that suggests the fix; not,
	// when set, is a fix the message must not suggest there (it would
	// not work).
	want, not string
	// kernel: the problem is this machine's kernel's (a module it
	// lacks); where the kernel has it, the case is skipped.
	kernel bool
	// The fix: overrides as --set takes them, and text edits, each old
	// text occurring exactly once in the file.
	sets  []string
	edits []edit
	// env are environment variables the fix sets (the message proposes a
	// change to the machine, not the file).
	env map[string]string
	// then is "" when the fixed file must validate; else a substring of
	// its next problem, which must not be want's.
	then string
}

type edit struct{ old, new string }

// suggestMachine is the machine the suggestions are applied on: 2 CPUs,
// 8GiB, as the spec package's bad files assume.
var suggestMachine = spec.Machine{CPUs: 2, MemBytes: 8 << 30}

const badDir = "../spec/testdata/bad"

// validate is what run --dry-run checks before it prints a plan.
func validate(path string, data []byte, sets []string, m spec.Machine) error {
	e, err := spec.Parse(path, data, sets, m)
	if err != nil {
		return err
	}
	_, err = ResolveAll(e, e.Cells())
	return err
}

// text is the case's file: its path for messages and its content.
func (s suggestion) text(t *testing.T) (string, string) {
	t.Helper()
	name, ok := strings.CutPrefix(s.file, "bad:")
	if !ok {
		return "s.yaml", s.file
	}
	data, err := os.ReadFile(filepath.Join(badDir, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return "testdata/bad/" + name + ".yaml", string(data)
}

func (s suggestion) run(t *testing.T) {
	t.Helper()
	m := s.machine
	if m.CPUs == 0 && m.MemBytes == 0 && !m.NoBlkioWeight && m.Image == nil {
		m = suggestMachine
	}
	path, text := s.text(t)
	if strings.Contains(text, "{image}") {
		text = strings.ReplaceAll(text, "{image}", noCommandImage(t))
	}
	before := validate(path, []byte(text), nil, m)
	if before == nil && s.kernel {
		t.Skip("this machine's kernel has what the message says it lacks")
	}
	if before == nil || !strings.Contains(before.Error(), s.want) {
		t.Fatalf("the file's problem is %v\nwant one saying %q\n--- file:\n%s", before, s.want, text)
	}
	if s.not != "" && strings.Contains(before.Error(), s.not) {
		t.Errorf("the message suggests %q, which does not work there:\n%v", s.not, before)
	}
	if len(s.sets) == 0 && len(s.edits) == 0 && len(s.env) == 0 {
		t.Fatal("the case applies no fix")
	}
	for k, v := range s.env {
		t.Setenv(k, v)
	}
	for _, ed := range s.edits {
		if n := strings.Count(text, ed.old); n != 1 {
			t.Fatalf("edit %q: the file has it %d times, want once\n--- file:\n%s", ed.old, n, text)
		}
		text = strings.Replace(text, ed.old, ed.new, 1)
	}
	after := validate(path, []byte(text), s.sets, m)
	switch {
	case after != nil && strings.Contains(after.Error(), s.want):
		t.Errorf("after the fix the problem is still there:\n%v\n--- fixed file (--set %q):\n%s", after, s.sets, text)
	case s.then == "" && after != nil:
		t.Errorf("the fix does not make the file valid:\n%v\n--- before:\n%v\n--- fixed file (--set %q):\n%s", after, before, s.sets, text)
	case s.then != "" && (after == nil || !strings.Contains(after.Error(), s.then)):
		t.Errorf("after the fix the next problem is %v\nwant one saying %q\n--- fixed file (--set %q):\n%s", after, s.then, s.sets, text)
	}
}

// suggestions are the cases, by where the message is written.
var suggestions = []suggestion{
	// internal/spec: the file's shape.
	{name: "an empty file: name and workloads", file: "bad:empty",
		want:  "an experiment needs at least name and workloads",
		edits: []edit{{"# nothing but a comment\n", "name: e\nworkloads: [{type: cpu.primes}]\n"}}},
	{name: "workloads: list one", file: "bad:missing_workloads",
		want: `missing key "workloads": list at least one workload`,
		sets: []string{"workloads=[{type: cpu.primes}]"}},
	{name: "workloads: a non-empty list of {name, type, params}", file: "bad:empty_workloads",
		want: "workloads must be a non-empty list of {name, type, params}",
		sets: []string{"workloads=[{name: cpu, type: cpu.primes, params: {threads: 1}}]"}},
	{name: "give each workload a distinct name", file: "bad:duplicate_workload",
		want:  "give each a distinct name",
		edits: []edit{{"{name: cpu, type: cpu.primes, params", "{name: cpu2, type: cpu.primes, params"}}},
	{name: "workload types are listed", file: "bad:unknown_type",
		want:  "types: cpu.compress, cpu.linpack, cpu.primes",
		edits: []edit{{"cpu.prime\n", "cpu.primes\n"}}},
	{name: "a workload needs a type", file: "bad:workload_no_type",
		want:  "workload has no type; types: ",
		edits: []edit{{"  - name: cpu\n", "  - name: cpu\n    type: cpu.primes\n"}}},
	{name: "unknown key: the allowed keys", file: "bad:unknown_key",
		want:  `unknown key "repetiton" in the experiment; allowed: name, description, seed, repetitions`,
		edits: []edit{{"repetiton:", "repetitions:"}}},
	{name: "too many combinations: split the experiment (one half)", file: "bad:too_many_cells",
		want:  "split the experiment into several files",
		edits: []edit{{`  cpus: ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]` + "\n", ""}}},
	{name: "too many combinations: split the experiment (the other half)", file: "bad:too_many_cells",
		want:  "split the experiment into several files",
		edits: []edit{{"  param.duration: [1s, 2s, 3s, 4s, 5s, 6s, 7s, 8s, 9s, 10s]\n", ""}}},

	// internal/spec: single values.
	{name: "timeout: a duration such as 30s", file: "bad:timeout_word",
		want: "timeout must be a duration such as 30s or 5m", sets: []string{"timeout=30s"}},
	{name: "subnet_pool: a /15 such as 198.18.0.0/15", file: "bad:subnet_pool",
		want: "want a /15 (512 subnets of 256 addresses, such as 198.18.0.0/15)", sets: []string{"subnet_pool=198.18.0.0/15"}},
	{name: "subnet_pool: a range for hosts' networks", file: "name: pool\nsubnet_pool: 127.0.0.0/15\nworkloads: [{type: cpu.primes}]\n",
		want: "use one such as 198.18.0.0/15", sets: []string{"subnet_pool=198.18.0.0/15"}},
	{name: "repetitions.rci: a percentage such as 2%", file: "bad:adaptive_rci",
		want: "a percentage such as 2% (above 0, below 100)", sets: []string{"repetitions.rci=2%"},
		then: "budget must be a positive duration"},
	{name: "budget: a duration such as 20m", file: "bad:adaptive_rci",
		want: "budget must be a positive duration such as 20m or 1h", sets: []string{"repetitions.rci=2%", "budget=20m"},
		then: "retries must be at most 5"},
	{name: "retries: at most 5", file: "bad:adaptive_rci",
		want: "retries must be at most 5", sets: []string{"repetitions.rci=2%", "budget=20m", "retries=5"},
		then: `repetitions.metric "nope" decides when each cell has enough trials, but workload cpu.primes (cpu.primes) has no such metric; its metrics:`},
	{name: "repetitions.metric: one of the workload's metrics", file: "bad:adaptive_metric",
		want: "has no such metric; its metrics: events_per_sec", sets: []string{"repetitions.metric=events_per_sec"}},
	{name: "adaptive repetitions need max", file: "name: a\nrepetitions: {min: 3, rci: 2%}\nworkloads: [{type: cpu.primes}]\n",
		want: "repetitions as a mapping needs max", sets: []string{"repetitions.max=10"}},
	{name: "adaptive repetitions need rci", file: "name: a\nrepetitions: {min: 3, max: 10}\nworkloads: [{type: cpu.primes}]\n",
		want: "repetitions as a mapping needs rci", sets: []string{"repetitions.rci=2%"}},
	{name: "machine.cpus: give a limit, or leave the key out (a limit)", file: "name: m\nmachine: {cpus: none}\nworkloads: [{type: cpu.primes}]\n",
		want: "machine.cpus: give a limit, such as 1", sets: []string{"machine.cpus=1"}},
	{name: "machine.cpuset: give a limit", file: "name: m\nmachine: {cpuset: none}\nworkloads: [{type: cpu.primes}]\n",
		want: "machine.cpuset: give a limit, such as 0", sets: []string{"machine.cpuset=0"}},
	{name: "machine.memory: give a limit", file: "name: m\nmachine: {memory: none}\nworkloads: [{type: cpu.primes}]\n",
		want: "machine.memory: give a limit, such as 1GiB", sets: []string{"machine.memory=1GiB"}},
	{name: "machine.cpus: give a limit, or leave the key out (out)", file: "name: m\nmachine: {cpus: none, memory: 1GiB}\nworkloads: [{type: cpu.primes}]\n",
		want: "leave the key out for no limit", edits: []edit{{"cpus: none, ", ""}}},

	// internal/spec: factors and levels.
	{name: "unknown factor: the allowed factors", file: "bad:unknown_factor",
		want: `unknown factor "plattform"; allowed: platform,`, edits: []edit{{"plattform:", "platform:"}}},
	{name: "unknown level: the allowed levels", file: "bad:unknown_level",
		want: `level "kvm" of platform: allowed: native, docker`, edits: []edit{{"native, kvm", "native, docker"}},
		then: `level "ipvlan" of network: allowed: host, loopback, bridge`},
	{name: "storage: the allowed levels", file: "bad:native_volume",
		want: `level "disk" of storage: allowed: layer, volume, tmpfs`, edits: []edit{{"volume, disk]", "volume, tmpfs]"}},
		then: "platform native writes to the host's own filesystem only (storage layer), but a cell combines it with storage volume"},
	{name: "pinning: the allowed levels", file: "bad:pinning",
		want: `level "diagonal" of pinning: allowed: none, same-core, separate-cores, spread`, edits: []edit{{", diagonal]", ", spread]"}},
		then: "does not combine with cpuset 0"},
	{name: "unknown level: the allowed networks", file: "bad:unknown_level",
		want: `level "ipvlan" of network: allowed: host, loopback, bridge`, edits: []edit{{"ipvlan", "macvlan"}},
		then: `level "kvm" of platform: allowed: native, docker`},
	{name: "a parameter: a size such as 64KiB", file: "bad:param_types",
		want: `"12 parsecs" is not a size in bytes such as 4096, 64KiB, 1MiB, 1MB`, edits: []edit{{"12 parsecs", "64KiB"}},
		then: `"5 seconds" is not a duration`},
	{name: "several: the allowed keys", file: "bad:several",
		want: `unknown key "colour" in the experiment; allowed: name,`, edits: []edit{{"colour: blue\n", ""}},
		then: `repetitions must be an integer, got "many"`},
	{name: "several: the allowed platforms", file: "bad:several",
		want: `level "kvm" of platform: allowed: native, docker, lxc, podman, nested, swarm, kubernetes, vm`, edits: []edit{{"kvm", "docker"}},
		then: `repetitions must be an integer, got "many"`},
	{name: "several: a duration such as 5s", file: "bad:several",
		want: `"forever" is not a duration such as 500ms, 5s, 2m`, edits: []edit{{"forever", "5s"}},
		then: `repetitions must be an integer, got "many"`},
	{name: "several: the workload types", file: "bad:several",
		want: `unknown workload type "http.load"; types: cpu.compress`, edits: []edit{{"http.load", "http.wrk"}},
		then: `repetitions must be an integer, got "many"`},
	{name: "cpus: a number of cores such as 0.5", file: "name: c\nfactors: {cpus: [lots]}\nworkloads: [{type: cpu.primes}]\n",
		want: "want none or a positive number of cores such as 0.5 or 1", sets: []string{"factors.cpus=[0.5]"}},
	{name: "cpuset: CPU numbers such as 0-1", file: "name: c\nfactors: {cpuset: [first]}\nworkloads: [{type: cpu.primes}]\n",
		want: "want CPU numbers such as 0, 0-1 or 0,2", sets: []string{"factors.cpuset=[0-1]"}},
	{name: "memory: a size such as 512MiB", file: "name: c\nfactors: {memory: [lots]}\nworkloads: [{type: cpu.primes}]\n",
		want: "want none or a size such as 512MiB or 2GiB", sets: []string{"factors.memory=[512MiB]"}},
	{name: "read_bps: such as 50MiB", file: "name: c\nfactors: {read_bps: [1KiB]}\nworkloads: [{type: cpu.primes}]\n",
		want: "bytes per second of at least 1MiB, such as 50MiB", sets: []string{"factors.read_bps=[50MiB]"}},
	{name: "pids: from 32", file: "name: c\nfactors: {pids: [8]}\nworkloads: [{type: cpu.primes}]\n",
		want: "want none or a number of processes from 32", sets: []string{"factors.pids=[32]"}},
	{name: "blkio_weight where the kernel has none: read_bps and write_bps work", machine: spec.Machine{CPUs: 2, MemBytes: 8 << 30, NoBlkioWeight: true},
		file: "name: b\nfactors: {blkio_weight: [100]}\nworkloads: [{type: cpu.primes}]\n",
		want: "read_bps and write_bps (throttles) work", edits: []edit{{"blkio_weight: [100]", "read_bps: [50MiB]"}}},
	{name: "underlay: a rate such as 100mbit", file: "name: u\nfactors: {hosts: [2], underlay: [fast]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a rate such as 100mbit or 1gbit", sets: []string{"factors.underlay=[100mbit]"}},
	{name: "underlay: delay needs a rate", file: "name: u\nfactors: {hosts: [2], underlay: [\"delay 10ms\"]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "needs a rate (at most", sets: []string{`factors.underlay=["1gbit delay 10ms"]`}},
	{name: "underlay: a rate's units", file: "name: u\nfactors: {hosts: [2], underlay: [100xbit]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "(use bit, kbit, mbit, gbit or bps, kbps, mbps, gbps)", sets: []string{"factors.underlay=[100mbit]"}},
	{name: "underlay: its parts", file: "name: u\nfactors: {hosts: [2], underlay: [{rate: 1gbit, lag: 1ms}]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: `underlay: unknown part "lag"; allowed: `, edits: []edit{{"lag: 1ms", "delay: 1ms"}}},
	{name: "host: an emulated host's number", file: "name: h\nfactors: {hosts: [2], server.host: [first]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "want an emulated host's number, 1 to 16", sets: []string{"factors.server.host=[2]"}},
	{name: "node: a hostname or key=value", file: "name: n\nfactors: {platform: [swarm], hosts: [2], network: [overlay], server.node: [\"a b\"]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "want a cluster node's hostname, or key=value", sets: []string{"factors.server.node=[role=db]"}},
	{name: "neighbour: a workload of the file", file: "name: n\nfactors: {neighbour: [memory]}\nworkloads: [{name: cpu, type: cpu.primes}, {name: mem, type: mem.stream}]\n",
		want: `"memory" is not a workload of this file; allowed: none, idle, cpu, mem, or several joined by +`, sets: []string{"factors.neighbour=[mem]"}},
	{name: "instances: from 1 to 256", file: "bad:instances_range",
		want: `level "257" of instances: want a whole number from 1 to 256`, edits: []edit{{"257", "256"}}},
	{name: "children: from 1 to 256", file: "bad:nested_children_range",
		want: `want a whole number from 1 to 256`, edits: []edit{{"300", "256"}}},
	{name: "runtime: a name such as crun", file: "bad:runtime_misplaced",
		want: "want a runtime name such as runc or crun", edits: []edit{{`, "run c"]`, "]"}},
		then: "runtime applies only to platform docker"},
	{name: "a parameter level such as 64KiB", file: "bad:param_factor_level",
		want: "is not a size in bytes such as 4096, 64KiB, 1MiB, 1MB", edits: []edit{{"huge", "64KiB"}}},
	{name: "a parameter: a duration such as 5s", file: "bad:param_types",
		want: `"5 seconds" is not a duration such as 500ms, 5s, 2m`, edits: []edit{{"5 seconds", "5s"}},
		then: `"many" is not an integer from 1 to 1024`},
	{name: "a parameter: an integer from 1 to 1024", file: "bad:param_range",
		want: "want an integer from 1 to 1024", edits: []edit{{"5000", "1024"}}},
	{name: "a parameter: one of its values", file: "bad:enum",
		want: `"sctp" is not one of tcp, udp`, edits: []edit{{"sctp", "udp"}}},
	{name: "unknown parameter: the allowed ones", file: "bad:unknown_param",
		want: `unknown parameter "thread" for cpu.primes; allowed: max_prime, threads, duration`, edits: []edit{{"thread:", "threads:"}}},
	{name: "factors: a mapping such as platform: [native, docker]", file: "name: f\nfactors: [platform]\nworkloads: [{type: cpu.primes}]\n",
		want: "e.g. platform: [native, docker]", sets: []string{"factors={platform: [native, docker]}"}},

	// internal/spec: bundles.
	{name: "a bundle needs a name of its own such as layer", file: "name: b\nfactors:\n  platform: {a: {platform: docker}}\nworkloads: [{type: cpu.primes}]\n",
		want: "needs a name of its own (e.g. layer)", edits: []edit{{"  platform: {", "  layer: {"}}},
	{name: "a bundle level is a mapping such as {platform: docker, network: bridge}", file: "name: b\nfactors:\n  layer: {a: docker}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "must be a mapping of factor to level, e.g. {platform: docker, network: bridge}", edits: []edit{{"{a: docker}", "{a: {platform: docker, network: bridge}}"}}},
	{name: "a bundle cannot set neighbour: make it a factor of its own", file: "name: b\nfactors:\n  layer: {a: {platform: docker, neighbour: mem}}\nworkloads: [{name: cpu, type: cpu.primes}, {name: mem, type: mem.stream}]\n",
		want: "neighbour cannot be set by a bundle; make it a factor of its own", edits: []edit{{", neighbour: mem}}", "}}\n  neighbour: [mem]"}}},
	{name: "a factor set by a bundle and alone: set it in one place", file: "name: b\nfactors:\n  platform: [docker]\n  layer: {a: {platform: docker, network: bridge}}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "factor platform is also set by the levels of layer: set it in one place", edits: []edit{{"  platform: [docker]\n", ""}}},
	{name: "baseline: a mapping such as {platform: native}", file: "name: b\nfactors: {platform: [native, docker]}\nbaseline: native\nworkloads: [{type: cpu.primes}]\n",
		want: "baseline must be a mapping of factor to level, e.g. {platform: native}", sets: []string{"baseline={platform: native}"}},
	{name: "baseline names a factor of the file", file: "bad:baseline_unknown_factor",
		want: `which is not among the factors (platform)`, edits: []edit{{"{network: host}", "{platform: native}"}}},
	{name: "baseline names a level of the factor", file: "bad:baseline_unknown_level",
		want: `which is not among its levels (native, docker)`, edits: []edit{{"podman", "native"}}},
	{name: "exclude names a factor of the file", file: "bad:exclude_unknown",
		want: `exclude names factor "platfrom", which is not among the factors (platform)`, edits: []edit{{"platfrom", "platform"}},
		then: `exclude names level "kvm" of platform, which is not among its levels (native, docker)`},
	{name: "exclude: a list of {factor: level} mappings", file: "name: x\nfactors: {platform: [native, docker]}\nexclude: {platform: docker}\nworkloads: [{type: cpu.primes}]\n",
		want: "exclude must be a list of {factor: level} mappings", edits: []edit{{"exclude: {platform: docker}", "exclude: [{platform: docker}]"}}},

	// internal/spec: cells. "exclude that combination" is what every
	// cell's problem ends with; where the file has one combination, the
	// next problem is that nothing is left to run.
	{name: "native on a bridge: the exclusion given", file: "bad:native_bridge",
		want:  "e.g. exclude: [{platform: native, network: bridge}]",
		edits: []edit{{"workloads:", "exclude: [{platform: native, network: bridge}]\nworkloads:"}}},
	{name: "a native server on a bridge: the exclusion given", file: "bad:native_bridge_role",
		want:  "e.g. exclude: [{server.platform: native, network: bridge}]",
		edits: []edit{{"  - {network: bridge, server.platform: docker}\n", "  - {network: bridge, server.platform: docker}\n  - {server.platform: native, network: bridge}\n"}}},
	{name: "native server and client on a bridge: the exclusion given", file: "bad:native_bridge_server",
		want:  "e.g. exclude: [{server.platform: native, network: bridge}]",
		edits: []edit{{"workloads:", "exclude: [{server.platform: native, network: bridge}]\nworkloads:"}}},
	{name: "native on tmpfs: the exclusion given", file: "bad:native_tmpfs",
		want:  "e.g. exclude: [{platform: native, storage: tmpfs}]",
		edits: []edit{{"workloads:", "exclude: [{platform: native, storage: tmpfs}]\nworkloads:"}}},
	{name: "native on a bridge by a bundle: the exclusion names the bundle's level", file: "name: b\nfactors:\n  layer:\n    reference: {platform: native, network: host}\n    bridged: {platform: native, network: bridge}\n    docker: {platform: docker, network: bridge}\nworkloads: [{type: net.tcp_stream}]\n",
		want:  "e.g. exclude: [{layer: bridged}]",
		edits: []edit{{"workloads:", "exclude: [{layer: bridged}]\nworkloads:"}}},
	{name: "native on a bridge by a bundle's network: the exclusion names both", file: "name: b\nfactors:\n  platform: [native, docker]\n  layer:\n    plain: {network: host}\n    bridged: {network: bridge}\nworkloads: [{type: net.tcp_stream}]\n",
		want:  "e.g. exclude: [{platform: native, layer: bridged}]",
		edits: []edit{{"workloads:", "exclude: [{platform: native, layer: bridged}]\nworkloads:"}}},
	{name: "a platform's factor where no role runs there: exclude it", file: "bad:nested_factor_elsewhere",
		want:  "children applies only to platform nested, and no role of this cell runs there (cell cpu.primes children=4 platform=docker); exclude that combination",
		edits: []edit{{"workloads:", "exclude: [{platform: docker, children: 4}]\nworkloads:"}}},
	{name: "runtime where no role runs on docker: exclude it", file: "bad:runtime_native",
		want:  "runtime applies only to platform docker, and no role of this cell runs there (cell cpu.primes platform=native runtime=crun); exclude that combination",
		edits: []edit{{"workloads:", "exclude: [{platform: native, runtime: crun}]\nworkloads:"}}},
	{name: "instances of a chain: use pairs", file: "bad:instances_chain",
		want: "use pairs for several client/server chains", edits: []edit{{"instances:", "pairs:"}}},
	{name: "instances and pairs: exclude the combination", file: "bad:instances_pairs",
		want: "instances and pairs do not combine", edits: []edit{{"  pairs: [2]\n", "  pairs: [1, 2]\n"}, {"workloads:", "exclude: [{instances: 2, pairs: 2}]\nworkloads:"}}},
	{name: "instances and pairs: change the levels", file: "bad:instances_pairs",
		want: "instances and pairs do not combine", edits: []edit{{"  pairs: [2]\n", ""}}},
	{name: "lifecycle.run with pairs: give instances", file: "bad:lifecycle_pairs",
		want: "give their number as instances, not pairs", edits: []edit{{"pairs:", "instances:"}}},
	{name: "pinning separate-cores of a single role: use spread", file: "bad:pinning_cells",
		want: "the workload has a single role: use spread", edits: []edit{{"[same-core, separate-cores]", "[same-core, spread]"}},
		then: "does not combine with cpuset 0"},
	{name: "pinning with a cpuset: exclude the combination", file: "bad:pinning_cells",
		want:  "places every instance on cores itself: it does not combine with cpuset 0",
		edits: []edit{{"workloads:", "exclude: [{cpuset: \"0\"}]\nworkloads:"}},
		then:  "the workload has a single role: use spread"},
	{name: "pinning of lifecycle.run: exclude the combination", file: "bad:pinning_cells",
		want:  "lifecycle.run times the lives of its hosting entities; pinning does not apply to it",
		edits: []edit{{"workloads:", "exclude: [{cpuset: \"0\"}, {workload: cpu, pinning: separate-cores}, {workload: create}]\nworkloads:"}}},
	{name: "lifecycle.run with pairs (and pinning): exclude the combination", file: "bad:pinning_cells",
		want:  "lifecycle.run times the lives of its hosting entities: give their number as instances, not pairs (cell create cpuset=none pairs=2 pinning=same-core); exclude that combination",
		edits: []edit{{"workloads:", "exclude: [{workload: create, pairs: 2}]\nworkloads:"}},
		then:  "does not combine with cpuset 0"},
	{name: "pinning separate-cores on one core", file: "name: p\nmachine: {cpuset: \"0\"}\nfactors: {pinning: [separate-cores]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "needs two cores or more", sets: []string{`machine.cpuset="0-1"`}},
	{name: "network loopback for one role: give all its roles loopback", file: "name: l\nfactors: {platform: [docker], server.network: [loopback], client.network: [bridge]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "give all its roles network loopback", sets: []string{"factors.client.network=[loopback]"}},
	{name: "a role on a host the cell lacks", file: "name: h\nfactors: {hosts: [2], server.host: [3]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "server is placed on emulated host 3, but the cell has hosts 2", sets: []string{"factors.hosts=[3]"}},
	{name: "a role on both a node and a host: give one", file: "name: n\nfactors: {platform: [swarm], hosts: [2], network: [overlay], server.node: [worker-1], server.host: [2]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "server is placed both on node worker-1 and on host 2: give one", edits: []edit{{", server.host: [2]", ""}}},
	{name: "a node for a platform without nodes: a cluster platform", file: "bad:node_not_cluster",
		want:  "node applies to a cluster platform (swarm, kubernetes)",
		edits: []edit{{"platform: [docker]", "platform: [swarm]"}, {"network: [bridge]", "network: [overlay]\n  hosts: [2]"}}},
	{name: "a node for a platform without nodes: change the levels", file: "bad:node_not_cluster",
		want:  "node applies to a cluster platform (swarm, kubernetes)",
		edits: []edit{{"  server.node: [worker-1]\n", ""}}},
	{name: "a cluster's role beside one elsewhere: every role on the cluster", file: "bad:swarm_mixed",
		want: "every role of a cell on a cluster runs on that cluster", edits: []edit{{"client.platform: [native]", "client.platform: [swarm]"}}},
	{name: "a limit a platform cannot apply: change the levels", file: "bad:swarm_cpuset",
		want: "platform swarm cannot apply cpuset 0", edits: []edit{{`cpuset: ["0"]`, `cpus: ["1"]`}}},
	{name: "a limit a platform cannot apply: exclude the combination", file: "name: c\nfactors: {platform: [docker, swarm], hosts: [2], network: [overlay], cpuset: [none, \"0\"]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "platform swarm cannot apply cpuset 0", edits: []edit{{"workloads:", "exclude: [{platform: swarm, cpuset: \"0\"}]\nworkloads:"}}},
	{name: "pairs and neighbours: exclude the combination", file: "name: p\nfactors: {pairs: [1, 2], neighbour: [mem]}\nworkloads: [{name: cpu, type: cpu.primes}, {name: mem, type: mem.stream}]\n",
		want: "pairs and neighbours do not combine", edits: []edit{{"workloads:", "exclude: [{pairs: 2, neighbour: mem}]\nworkloads:"}}},
	{name: "lifecycle.run with neighbours: exclude the combination", file: "name: l\nfactors: {neighbour: [cpu]}\nworkloads: [{name: create, type: lifecycle.run}, {name: cpu, type: cpu.primes}]\n",
		want: "it has no measured run for neighbours to load", edits: []edit{{"workloads:", "exclude: [{workload: create, neighbour: cpu}]\nworkloads:"}}},
	{name: "instances and neighbours: exclude the combination", file: "name: l\nfactors: {instances: [1, 2], neighbour: [cpu]}\nworkloads: [{name: mem, type: mem.stream}, {name: cpu, type: cpu.primes}]\n",
		want: "instances and neighbours do not combine", edits: []edit{{"workloads:", "exclude: [{instances: 2, neighbour: cpu}]\nworkloads:"}}},
	{name: "a baseline that is excluded", file: "bad:baseline_excluded",
		want: "baseline {platform: native} matches no cell of workload cpu (is it excluded?)", edits: []edit{{"exclude:\n  - {platform: native}\n", ""}}},

	// internal/platform's Provision, reported by validation.
	{name: "a network a platform does not offer: exclude the combination", file: "bad:ingress_docker",
		want: "platform docker does not offer network ingress here", edits: []edit{{"workloads:", "exclude: [{platform: docker, network: ingress}]\nworkloads:"}},
		then: "every combination of factors is excluded: nothing to run"},
	{name: "a network docker does not offer: host, which it does", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[host]"}},
	{name: "a network docker does not offer: loopback, which it does", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[loopback]"}},
	{name: "a network docker does not offer: bridge, which it does", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[bridge]"}},
	{name: "a network docker does not offer: bridge-default, which it does", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[bridge-default]"}},
	{name: "a network docker does not offer: macvlan, which it does", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[macvlan]"}},
	{name: "a network docker does not offer: ovs, which it does", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[ovs]"}},
	{name: "a network docker does not offer: published, which it does for a server", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[published]"},
		then: "put the server alone on it, server.network: [published]"},
	{name: "a network docker does not offer: published-proxy, which it does for a server", file: "bad:ingress_docker",
		want: "it offers host, loopback, bridge, bridge-default, macvlan, ovs, published, published-proxy", sets: []string{"factors.network=[published-proxy]"},
		then: "put the server alone on it, server.network: [published-proxy]"},
	{name: "a machine's network between emulated hosts, docker: bridge", file: "name: m\nfactors: {platform: [docker], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs, overlay, overlay-encrypted, published there", sets: []string{"factors.network=[bridge]"}},
	{name: "a machine's network between emulated hosts, docker: ovs", file: "name: m\nfactors: {platform: [docker], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs, overlay, overlay-encrypted, published there", sets: []string{"factors.network=[ovs]"}},
	{name: "a machine's network between emulated hosts, docker: overlay", file: "name: m\nfactors: {platform: [docker], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs, overlay, overlay-encrypted, published there", sets: []string{"factors.network=[overlay]"}},
	{name: "a machine's network between emulated hosts, docker: overlay-encrypted", file: "name: m\nfactors: {platform: [docker], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs, overlay, overlay-encrypted, published there", sets: []string{"factors.network=[overlay-encrypted]"}},
	{name: "a machine's network between emulated hosts, docker: published", file: "name: m\nfactors: {platform: [docker], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs, overlay, overlay-encrypted, published there", sets: []string{"factors.network=[published]"}},
	{name: "a machine's network between emulated hosts, vm: bridge", file: "name: m\nfactors: {platform: [vm], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs there", sets: []string{"factors.network=[bridge]"}},
	{name: "published-proxy between emulated hosts, vm: bridge", file: "name: m\nfactors: {platform: [vm], hosts: [2], network: [published-proxy]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network published-proxy is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs there", sets: []string{"factors.network=[bridge]"}},
	{name: "a virtual machine on an emulated host's namespace: network bridge", file: "name: v\nfactors: {platform: [vm], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a virtual machine cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs", sets: []string{"factors.network=[bridge]"}},
	{name: "a machine's network between emulated hosts, vm: ovs", file: "name: m\nfactors: {platform: [vm], hosts: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network macvlan is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs there", sets: []string{"factors.network=[ovs]"}},
	{name: "published-proxy between emulated hosts, vm: ovs", file: "name: m\nfactors: {platform: [vm], hosts: [2], network: [published-proxy]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network published-proxy is on the machine itself, not between emulated hosts (hosts 2): use bridge, ovs there", sets: []string{"factors.network=[ovs]"}},
	{name: "a virtual machine on an emulated host's namespace: network ovs", file: "name: v\nfactors: {platform: [vm], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a virtual machine cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs", sets: []string{"factors.network=[ovs]"}},
	{name: "a virtual machine on an emulated host's namespace: platform native", file: "name: v\nfactors: {platform: [vm], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use platform native or platform docker or platform lxc or platform podman on the hosts' network", sets: []string{"factors.platform=[native]"}},
	{name: "a virtual machine on an emulated host's namespace: platform lxc", file: "name: v\nfactors: {platform: [vm], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use platform native or platform docker or platform lxc or platform podman on the hosts' network", sets: []string{"factors.platform=[lxc]"}},
	{name: "a virtual machine on an emulated host's namespace: platform podman", file: "name: v\nfactors: {platform: [vm], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use platform native or platform docker or platform lxc or platform podman on the hosts' network", sets: []string{"factors.platform=[podman]"}},
	{name: "a virtual machine on an emulated host's namespace: platform docker", file: "name: v\nfactors: {platform: [vm], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use platform native or platform docker or platform lxc or platform podman on the hosts' network", sets: []string{"factors.platform=[docker]"}},
	{name: "a nested child on an emulated host's namespace: network bridge", file: "name: n\nfactors: {platform: [nested], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a nested child container cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs, overlay, overlay-encrypted, published", sets: []string{"factors.network=[bridge]"}},
	{name: "a nested child on an emulated host's namespace: network ovs", file: "name: n\nfactors: {platform: [nested], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a nested child container cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs, overlay, overlay-encrypted, published", sets: []string{"factors.network=[ovs]"}},
	{name: "a nested child on an emulated host's namespace: network overlay", file: "name: n\nfactors: {platform: [nested], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a nested child container cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs, overlay, overlay-encrypted, published", sets: []string{"factors.network=[overlay]"}},
	{name: "a nested child on an emulated host's namespace: network overlay-encrypted", file: "name: n\nfactors: {platform: [nested], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a nested child container cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs, overlay, overlay-encrypted, published", sets: []string{"factors.network=[overlay-encrypted]"}},
	{name: "a nested child on an emulated host's namespace: network published", file: "name: n\nfactors: {platform: [nested], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a nested child container cannot share an emulated host's namespace (network host with hosts 2): use platform native or platform docker or platform lxc or platform podman on the hosts' network, or network bridge, ovs, overlay, overlay-encrypted, published", sets: []string{"factors.network=[published]"}},
	{name: "Docker's encrypted overlay where the kernel has no ESP: overlay", kernel: true, file: "name: e\nfactors: {platform: [swarm], hosts: [2], network: [overlay-encrypted]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use overlay, or a swarm whose nodes have it", sets: []string{"factors.network=[overlay]"}},
	{name: "more nodes than a cluster gives a cell", file: "bad:swarm_nodes",
		want: "platform swarm gives a cell at most 8 nodes (hosts 9)", sets: []string{"factors.hosts=[8]"}},
	{name: "an overlay needs hosts 2 or more", file: "name: o\nfactors: {platform: [docker], network: [overlay]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "network overlay joins emulated hosts: it needs hosts 2 or more", sets: []string{"factors.hosts=[2]"}},
	{name: "published-proxy between emulated hosts: use published", file: "name: p\nfactors: {platform: [docker], hosts: [2], server.network: [published-proxy], client.platform: [native]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "so published is that path: use it there", sets: []string{"factors.server.network=[published]"}},
	{name: "a nested child on its parent's host namespace between emulated hosts: another platform", file: "name: n\nfactors: {platform: [nested], hosts: [2], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "a nested child container cannot share an emulated host's namespace", sets: []string{"factors.platform=[docker]"}},

	// internal/platform's drivers, reported by validation.
	{name: "a nested child on the inner bridge of a host-network parent: parent.network bridge", file: "bad:nested_host_parent_bridge",
		want: "use parent.network bridge", sets: []string{"factors.parent.network=[bridge]"}},
	{name: "a nested child on the inner bridge of a host-network parent: network host", file: "bad:nested_host_parent_bridge",
		want: "or network host for the child", sets: []string{"factors.network=[host]"}},
	{name: "parent.network ovs: network bridge", file: "name: o\nfactors: {platform: [nested], parent.network: [ovs], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "parent.network ovs wires the parent into Open vSwitch with the child on its engine's bridge: network must be bridge", sets: []string{"factors.network=[bridge]"}},
	{name: "parent.network ovs: leave parent.network at bridge", file: "name: o\nfactors: {platform: [nested], parent.network: [ovs], network: [host]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "leave parent.network at bridge", edits: []edit{{"parent.network: [ovs], ", ""}}},
	{name: "parent.network ovs: children must be 1", file: "name: o\nfactors: {platform: [nested], parent.network: [ovs], network: [bridge], children: [2]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "parent.network ovs wires each child's parent on its own: children must be 1", sets: []string{"factors.children=[1]"}},
	{name: "a nested child on a lab network: parent.network does not apply", file: "name: o\nfactors: {platform: [nested], parent.network: [host], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "parent.network does not apply (leave it at bridge)", edits: []edit{{"parent.network: [host], ", ""}}},
	{name: "a nested child on a lab network: children must be 1", file: "name: o\nfactors: {platform: [nested], children: [2], network: [macvlan]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "each child's parent is wired on its own: children must be 1", sets: []string{"factors.children=[1]"}},
	{name: "an image store without a restart command: set one", file: "name: s\nfactors: {platform: [docker], image_store: [overlay2]}\nworkloads: [{type: cpu.primes}]\n",
		want: "set CTRBENCH_ENGINE_RESTART to a command that restarts your engine", env: map[string]string{"CTRBENCH_ENGINE_RESTART": "true"}},
	{name: "the routing mesh, refused here: overlay", file: "name: i\nfactors: {platform: [swarm], hosts: [2], network: [ingress]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use overlay or host", sets: []string{"factors.network=[overlay]"}},
	{name: "the routing mesh, refused here: host", file: "name: i\nfactors: {platform: [swarm], hosts: [2], network: [ingress]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "use overlay or host", sets: []string{"factors.network=[host]"}},

	// internal/plan: what resolving the cells refuses.
	{name: "published, both roles on it: the server alone", file: "name: p\nfactors:\n  platform: [docker]\n  network: [published]\nworkloads: [{type: net.tcp_stream}]\n",
		want: "put the server alone on it, server.network: [published], with the client on network host (the default)", not: "client.platform: native",
		edits: []edit{{"  network: [published]", "  server.network: [published]"}}},
	{name: "published-proxy, both roles on it: the server alone", file: "name: p\nfactors:\n  platform: [docker]\n  network: [bridge, published-proxy]\nworkloads: [{type: net.tcp_stream}]\n",
		want: "put the server alone on it, server.network: [published-proxy]", not: "client.platform: native",
		edits: []edit{{"  network: [bridge, published-proxy]", "  server.network: [bridge, published-proxy]"}}},
	{name: "published on podman, both roles on it: the server alone", file: "name: p\nfactors:\n  platform: [podman]\n  network: [published]\nworkloads: [{type: net.tcp_rr}]\n",
		want: "put the server alone on it, server.network: [published]", not: "client.platform: native",
		edits: []edit{{"  network: [published]", "  server.network: [published]"}}},
	{name: "published, both roles on it: client.network host", file: "name: p\nfactors:\n  platform: [docker]\n  network: [published]\nworkloads: [{type: net.tcp_stream}]\n",
		want: "or set client.network: host", not: "client.platform: native", sets: []string{"factors.client.network=[host]"}},
	{name: "published, the client on a bridge: client.network host", file: "name: p\nfactors: {platform: [docker], server.network: [published], client.network: [bridge]}\nworkloads: [{type: net.tcp_stream}]\n",
		want: "set client.network: host", sets: []string{"factors.client.network=[host]"}},
	{name: "published, a pingpong's pong: ping.network host", file: "name: p\nfactors: {platform: [docker], network: [bridge], pong.network: [published]}\nworkloads: [{type: http.pingpong}]\n",
		want: "set ping.network: host", sets: []string{"factors.ping.network=[host]"}},
	{name: "published, a nested client: a host process", file: "name: p\nfactors: {server.platform: [docker], server.network: [published], client.platform: [nested], client.network: [bridge]}\nworkloads: [{type: net.tcp_stream}]\n",
		want: "set client.platform: native and client.network: host", not: "or set client.network: host", sets: []string{"factors.client.platform=[native]", "factors.client.network=[host]"}},
	{name: "published, a neighbour's two ends: neighbour.network host", file: "name: p\nfactors: {platform: [docker], network: [published], neighbour: [tcp], packaging: [separate-containers]}\nexclude: [{workload: tcp}]\nworkloads: [{name: cpu, type: cpu.primes}, {name: tcp, type: net.tcp_stream}]\n",
		want: "set neighbour.network: host", not: "alone", edits: []edit{{"packaging: [separate-containers]}", "packaging: [separate-containers], neighbour.network: [host]}"}}},
	{name: "published, a workload that cannot publish: one that can", file: "name: p\nfactors: {platform: [docker], server.network: [published], client.platform: [native]}\nworkloads: [{type: net.sockperf}]\n",
		want: "use it with http.get, http.pingpong", edits: []edit{{"net.sockperf", "net.tcp_rr"}}},
	{name: "published, a service on the agent's port: another port", file: "name: p\nfactors: {platform: [docker], server.network: [published], client.platform: [native]}\nworkloads: [{type: service, params: {command: [redis-server], port: 15201, client: {type: net.tcp_rr}}}]\n",
		want: "give it another port", edits: []edit{{"port: 15201", "port: 6379"}}},
	{name: "an underlay that delays without emulated hosts: add hosts 2", file: "name: d\nfactors: {underlay: [\"1gbit delay 1ms\"]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "add hosts: 2 (or more)", sets: []string{"factors.hosts=[2]"}},
	{name: "an underlay that delays a cluster's nodes: emulated hosts", file: "name: d\nfactors: {platform: [swarm], hosts: [2], network: [overlay], underlay: [\"1gbit loss 1%\"]}\nworkloads: [{type: net.tcp_rr}]\n",
		want: "delay, jitter and loss are for emulated hosts (hosts ≥ 2 on the other platforms)", sets: []string{"factors.platform=[docker]"}},

	// internal/workloads and internal/outputs: parameters, reported by
	// validation.
	{name: "exec: a command such as [sysbench, cpu, run]", file: "bad:exec_no_command",
		want: "e.g. command: [sysbench, cpu, run]", edits: []edit{{"      format: json\n", "      format: json\n      command: [sysbench, cpu, run]\n"}}},
	{name: "exec: a command list such as [redis-server, --port, \"6379\"]", file: "bad:exec_command_scalar",
		want: `want a list of strings, e.g. [redis-server, --port, "6379"]`, edits: []edit{{`"sysbench cpu run"`, "[sysbench, cpu, run]"}}},
	{name: "exec: metrics such as {ops: {path: result.ops, …}}", file: "bad:alias_bomb",
		want: "e.g. {ops: {path: result.ops, unit: ops/s, better: higher}}", sets: []string{"workloads.0.params.metrics={ops: {path: result.ops, unit: ops/s, better: higher}}"}},
	{name: "exec: write (?P<value>…) around the number", file: "bad:exec_bad_metric",
		want: "write (?P<value>…) around the number", edits: []edit{{"'ops: ([0-9.]+)'", "'ops: (?P<value>[0-9.]+)'"}},
		then: `metric "p99": has no pattern`},
	{name: "exec: a regex metric's pattern, not a path", file: "bad:exec_bad_metric",
		want:  `metric "p99": has path, which a regex metric does not have; its keys are pattern`,
		edits: []edit{{"{path: latency.p99,", `{pattern: 'p99: (?P<value>[0-9.]+)',`}, {"'ops: ([0-9.]+)'", "'ops: (?P<value>[0-9.]+)'"}}},
	{name: "exec: a regex metric's pattern", file: "bad:exec_bad_metric",
		want:  `metric "p99": has no pattern; pattern is a Go regular expression with one group named value around the number; e.g. 'Requests/sec:\s+(?P<value>[0-9.]+)'`,
		edits: []edit{{"{path: latency.p99,", `{pattern: 'p99: (?P<value>[0-9.]+)',`}},
		then:  `metric "ops": pattern "ops: ([0-9.]+)" has no group named value`},
	{name: "exec: a metric's unit", file: "name: x\nworkloads: [{type: exec, params: {command: [app], metrics: {ops: {path: ops, better: higher}}}}]\n",
		want: "has no unit; give the unit its values are in, e.g. ms, req/s or ops", edits: []edit{{"{path: ops, ", "{path: ops, unit: ops/s, "}}},
	{name: "exec: a metric's direction", file: "name: x\nworkloads: [{type: exec, params: {command: [app], metrics: {ops: {path: ops, unit: ops/s}}}}]\n",
		want: "say which direction is an improvement: higher or lower", edits: []edit{{"unit: ops/s}", "unit: ops/s, better: higher}"}}},
	{name: "exec: a metric's name such as p99_ms", file: "name: x\nworkloads: [{type: exec, params: {command: [app], metrics: {p99.ms: {path: p99, unit: ms, better: lower}}}}]\n",
		want: "e.g. p99_ms", edits: []edit{{"p99.ms:", "p99_ms:"}}},
	{name: "exec: wall_time is ctrbench's: another name", file: "name: x\nworkloads: [{type: exec, params: {command: [app], metrics: {wall_time: {path: t, unit: s, better: lower}}}}]\n",
		want: "give yours another name", edits: []edit{{"wall_time:", "run_time:"}}},
	{name: "exec placeholders: the allowed ones", file: "bad:exec_placeholder",
		want:  "allowed: {trial} (the trial's number), {cell.<factor>} for a factor of this file (cpus), {{ for a literal {",
		edits: []edit{{"{cell.memory} {server.host}", "{trial} {{server.host}"}}},
	{name: "an image with no command: give the command", file: "name: x\nworkloads: [{type: exec, params: {image_archive: '{image}', metrics: {ops: {path: ops, unit: ops/s, better: higher}}}}]\n",
		want: "has neither ENTRYPOINT nor CMD; give the main's command", edits: []edit{{"{image_archive:", "{command: [/bin/app], image_archive:"}}},
	{name: "a service's image with no command: give the command", file: "name: x\nworkloads: [{type: service, params: {image_archive: '{image}', port: 8080, client: {type: http.get, params: {path: /}}}}]\n",
		want: "has neither ENTRYPOINT nor CMD; give the server's command", edits: []edit{{"{image_archive:", "{command: [/bin/app], image_archive:"}}},
	{name: "neighbours from other images in the target's instance: packaging separate-containers", file: "name: n\nfactors: {platform: [docker], neighbour: [b]}\nworkloads:\n  - {name: a, type: exec, params: {image: local/a:1, metrics: {ops: {path: ops, unit: ops/s, better: higher}}}}\n  - {name: b, type: exec, params: {image: local/b:1, metrics: {ops: {path: ops, unit: ops/s, better: higher}}}}\n",
		want: "use packaging separate-containers", sets: []string{"factors.packaging=[separate-containers]"}},
	{name: "neighbours from other images in the target's instance: one image", file: "name: n\nfactors: {platform: [docker], neighbour: [b]}\nworkloads:\n  - {name: a, type: exec, params: {image: local/a:1, metrics: {ops: {path: ops, unit: ops/s, better: higher}}}}\n  - {name: b, type: exec, params: {image: local/b:1, metrics: {ops: {path: ops, unit: ops/s, better: higher}}}}\n",
		want: "or run them from one image", edits: []edit{{"local/b:1", "local/a:1"}}},
	{name: "exec: an aggregate of the known ones", file: "name: x\nworkloads: [{type: exec, params: {command: [app], format: jsonl, metrics: {ops: {path: ops, unit: ops/s, better: higher, aggregate: median}}}}]\n",
		want: `aggregate "median" is not one ctrbench knows; aggregates: `, edits: []edit{{"aggregate: median", "aggregate: mean"}}},
	{name: "exec: a json metric has no aggregate; its keys", file: "name: x\nworkloads: [{type: exec, params: {command: [app], metrics: {ops: {path: ops, unit: ops/s, better: higher, aggregate: mean}}}}]\n",
		want: "has aggregate, which a json metric does not have (its path finds one value); its keys are path, unit, better", edits: []edit{{", aggregate: mean", ""}}},
	{name: "exec: a format of the known ones", file: "name: x\nworkloads: [{type: exec, params: {command: [app], format: yaml, metrics: {ops: {path: ops, unit: ops/s, better: higher}}}}]\n",
		want: `"yaml" is not one of`, edits: []edit{{"format: yaml", "format: json"}}},
	{name: "exec: a unit group needs a time unit", file: "name: x\nworkloads: [{type: exec, params: {command: [app], format: regex, metrics: {lat: {pattern: 'lat: (?P<value>[0-9.]+)(?P<unit>[mun]?s)', unit: ops, better: lower}}}}]\n",
		want: "which must then be a time unit (", edits: []edit{{"unit: ops,", "unit: ms,"}}},
	{name: "exec: image or image_archive, not both", file: "name: x\nworkloads: [{type: exec, params: {command: [/bin/app], image: local/a:1, image_archive: '{image}'}}]\n",
		want: "one of image and image_archive, not both", edits: []edit{{"image: local/a:1, ", ""}}},
	{name: "a service needs a port", file: "name: s\nworkloads: [{type: service, params: {command: [redis-server], client: {type: net.tcp_rr}}}]\n",
		want: "a service needs the port its server listens on, 1 to 65535", edits: []edit{{"client:", "port: 6379, client:"}}},
	{name: "a service's ready probe such as {tcp: true}", file: "name: s\nworkloads: [{type: service, params: {command: [redis-server], port: 6379, ready: tcp, client: {type: net.tcp_rr}}}]\n",
		want: "want a mapping such as {tcp: true}", edits: []edit{{"ready: tcp,", "ready: {tcp: true},"}}},
	{name: "a service's ready probe: its keys", file: "name: s\nworkloads: [{type: service, params: {command: [redis-server], port: 6379, ready: {tcp: true, wait: 5s}, client: {type: net.tcp_rr}}}]\n",
		want: `unknown key "wait"; allowed: tcp, http, timeout`, edits: []edit{{"wait: 5s", "timeout: 5s"}}},
	{name: "a service's ready timeout such as 20s", file: "name: s\nworkloads: [{type: service, params: {command: [redis-server], port: 6379, ready: {tcp: true, timeout: soon}, client: {type: net.tcp_rr}}}]\n",
		want: "is not a positive duration such as 20s", edits: []edit{{"timeout: soon", "timeout: 20s"}}},
	{name: "a service's client: the allowed types", file: "name: s\nworkloads: [{type: service, params: {command: [redis-server], port: 6379, client: {type: net.udp_rr}}}]\n",
		want: `client type "net.udp_rr": allowed: `, edits: []edit{{"net.udp_rr", "net.tcp_rr"}}},
	{name: "a service needs a client such as {type: http.get, params: {path: /}}", file: "name: s\nworkloads: [{type: service, params: {command: [httpd], port: 8080}}]\n",
		want: "a service needs a client: {type: http.get, params: {path: /}}", edits: []edit{{"port: 8080}", "port: 8080, client: {type: http.get, params: {path: /}}}"}}},
	{name: "a service needs a command such as [redis-server, …]", file: "name: s\nworkloads: [{type: service, params: {port: 6379, client: {type: net.tcp_rr}}}]\n",
		want: `e.g. command: [redis-server, --port, "6379"]`, edits: []edit{{"{port: 6379,", `{command: [redis-server, --port, "6379"], port: 6379,`}}},

	// internal/spec: profiles.
	{name: "a profile's list item by index or name", file: "bad:profile_unknown_path",
		want: `no list item "cpus" (use an index or the item's name)`, edits: []edit{{"workloads.cpus.params", "workloads.cpu.params"}},
		then: `unknown key "repetiton"`},
	{name: "a profile's key: the allowed ones", file: "bad:profile_unknown_path",
		want: `profile quick, repetiton=2: unknown key "repetiton" in the experiment; allowed: name,`, edits: []edit{{"repetiton:", "repetitions:"}},
		then: `no list item "cpus"`},
	{name: "a profile's parameter: the allowed ones", file: "bad:profile_unknown_path",
		want: `unknown parameter "thread" for cpu.primes; allowed: max_prime, threads, duration`, edits: []edit{{"params.thread:", "params.threads:"}},
		then: `no list item "cpus"`},
	{name: "a profile's factor: the allowed ones", file: "bad:profile_unknown_path",
		want: `factors.plattform=[docker]: unknown factor "plattform"; allowed: platform,`, edits: []edit{{"factors.plattform:", "factors.platform:"}},
		then: `no list item "cpus"`},
	{name: "a profile's duration such as 5s", file: "bad:profile_wrong_type",
		want: `workloads.cpu.params.duration=3: parameter duration of cpu: "3" is not a duration such as 500ms, 5s, 2m`, edits: []edit{{"duration: 3 ", "duration: 3s"}},
		then: "repetitions must be an integer"},
	{name: "a profile's name: letters, digits", file: "bad:profile_wrong_type",
		want: "use letters, digits, '-', '_' and '.'", edits: []edit{{"bad name:", "bad-name:"}},
		then: "repetitions must be an integer"},
	{name: "a profile is a mapping such as {repetitions: 10, …}", file: "bad:profile_wrong_type",
		want: "e.g. {repetitions: 10, workloads.cpu.params.max_prime: 40000}", edits: []edit{{"quick: 2 ", "quick: {repetitions: 10, workloads.cpu.params.max_prime: 40000} "}},
		then: "repetitions must be an integer"},
	{name: "a profile's path: what --set takes before =", file: "name: p\nworkloads: [{name: cpu, type: cpu.primes}]\nprofiles:\n  quick: {[a]: 1}\n",
		want: "an override's path is what --set takes before =, e.g. repetitions", edits: []edit{{"{[a]: 1}", "{repetitions: 1}"}}},
	{name: "a profile's value: the value itself, not an alias", file: "name: p\nrepetitions: &r 3\nworkloads: [{name: cpu, type: cpu.primes}]\nprofiles:\n  quick: {warmup: *r}\n",
		want: "write the value itself", edits: []edit{{"{warmup: *r}", "{warmup: 3}"}}},
}

func TestEverySuggestedFixWorks(t *testing.T) {
	// The swarm driver refuses the routing mesh by this machine's kernel
	// unless an engine is named.
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	// The docker driver refuses an image store without a command that
	// restarts the engine (a case sets one).
	t.Setenv("CTRBENCH_ENGINE_RESTART", "")
	for _, s := range suggestions {
		t.Run(s.name, s.run)
	}
}

// suggests finds a message that proposes a change to the file.
var suggests = regexp.MustCompile(`[;:(] ?(set|use|exclude that|add|give|remove|put|write|split|list|make|leave|declare|say) |e\.g\. |such as |allowed: |types: |its metrics: |it offers |keys are |platforms that can: `)

// Every problem of internal/spec's bad files whose message suggests a
// fix has its case above.
func TestEverySuggestionOfTheBadFilesHasACase(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join(badDir, "..", "bad.golden"))
	if err != nil {
		t.Fatal(err)
	}
	file := ""
	checked := 0
	for _, line := range strings.Split(string(golden), "\n") {
		if f, ok := strings.CutPrefix(line, "== testdata/bad/"); ok {
			file = strings.TrimSuffix(f, ".yaml")
			continue
		}
		if !suggests.MatchString(line) {
			continue
		}
		checked++
		covered := false
		for _, s := range suggestions {
			covered = covered || s.file == "bad:"+file && strings.Contains(line, s.want)
		}
		if !covered {
			t.Errorf("no case applies the fix this message suggests:\n%s", line)
		}
	}
	if checked == 0 {
		t.Fatal("no message of bad.golden suggests a fix: is the pattern wrong?")
	}
}

// noCommandImage writes an OCI image layout of one image holding one
// program, /bin/app, with neither ENTRYPOINT nor CMD, and returns its
// directory.
func noCommandImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	blob := func(data []byte) map[string]any {
		sum := sha256.Sum256(data)
		d := hex.EncodeToString(sum[:])
		if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"digest": "sha256:" + d, "size": len(data)}
	}
	js := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	body := "#!/bin/sh\n"
	for _, h := range []*tar.Header{{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "bin/app", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))}} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l := blob(layer.Bytes())
	l["mediaType"] = "application/vnd.oci.image.layer.v1.tar"
	c := blob(js(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []any{l["digest"]}}}))
	c["mediaType"] = "application/vnd.oci.image.config.v1+json"
	m := blob(js(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": c, "layers": []any{l}}))
	m["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
	for name, data := range map[string][]byte{
		"oci-layout": js(map[string]any{"imageLayoutVersion": "1.0.0"}),
		"index.json": js(map[string]any{"schemaVersion": 2, "manifests": []any{m}}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
