package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const setBase = `name: set base
repetitions: 3
factors:
  platform: [native, docker]
exclude:
  - {platform: native}
workloads:
  - name: cpu
    type: cpu.primes
    params: {max_prime: 20000}
  - name: tcp
    type: net.tcp_stream
`

const setQualified = `name: qualified
factors:
  server.platform: [native]
  network: [host]
workloads:
  - {name: tcp, type: net.tcp_stream}
`

func factorLevels(e *Experiment, name string) []string {
	if f := findFactor(e.Factors, name); f != nil {
		return f.Levels
	}
	return nil
}

func TestSet(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		sets  []string
		check func(t *testing.T, e *Experiment)
	}{
		{"top-level scalar", setBase, []string{"repetitions=10"}, func(t *testing.T, e *Experiment) {
			if e.Repetitions != 10 {
				t.Errorf("repetitions = %d", e.Repetitions)
			}
		}},
		{"missing key added", setBase, []string{"warmup=2"}, func(t *testing.T, e *Experiment) {
			if e.Warmup != 2 {
				t.Errorf("warmup = %d", e.Warmup)
			}
		}},
		{"later set wins", setBase, []string{"repetitions=4", "repetitions=7"}, func(t *testing.T, e *Experiment) {
			if e.Repetitions != 7 {
				t.Errorf("repetitions = %d", e.Repetitions)
			}
		}},
		{"seed and timeout", setBase, []string{"seed=7", "timeout=90s"}, func(t *testing.T, e *Experiment) {
			if e.Seed != 7 || !e.SeedGiven || e.Timeout != 90*time.Second {
				t.Errorf("seed %d given %v timeout %s", e.Seed, e.SeedGiven, e.Timeout)
			}
		}},
		{"value containing = and spaces", setBase, []string{"description=a = b"}, func(t *testing.T, e *Experiment) {
			if e.Description != "a = b" {
				t.Errorf("description = %q", e.Description)
			}
		}},
		{"param by workload name", setBase, []string{"workloads.cpu.params.max_prime=40000"}, func(t *testing.T, e *Experiment) {
			if w, _ := e.Workload("cpu"); w.Params["max_prime"] != "40000" {
				t.Errorf("max_prime = %q", w.Params["max_prime"])
			}
		}},
		{"param by index", setBase, []string{"workloads.0.params.threads=2"}, func(t *testing.T, e *Experiment) {
			if w, _ := e.Workload("cpu"); w.Params["threads"] != "2" || w.Params["max_prime"] != "20000" {
				t.Errorf("params = %v", w.Params)
			}
		}},
		{"param of a workload without params, normalised", setBase, []string{"workloads.tcp.params.message_size=64KiB"}, func(t *testing.T, e *Experiment) {
			if w, _ := e.Workload("tcp"); w.Params["message_size"] != "65536" {
				t.Errorf("message_size = %q", w.Params["message_size"])
			}
		}},
		{"workload by type when unnamed", "name: x\nworkloads:\n  - {type: cpu.primes}\n", []string{"workloads.cpu.primes.params.threads=3"}, func(t *testing.T, e *Experiment) {
			if e.Workloads[0].Params["threads"] != "3" {
				t.Errorf("threads = %q", e.Workloads[0].Params["threads"])
			}
		}},
		{"factor list", setBase, []string{"factors.platform=[docker]", "exclude=[]"}, func(t *testing.T, e *Experiment) {
			if got := factorLevels(e, "platform"); !reflect.DeepEqual(got, []string{"docker"}) {
				t.Errorf("platform levels = %v", got)
			}
		}},
		{"new factor", setBase, []string{"factors.network=[host]"}, func(t *testing.T, e *Experiment) {
			if len(e.Factors) != 2 || e.Factors[1].Name != "network" {
				t.Errorf("factors = %v", e.Factors)
			}
		}},
		{"dotted factor added", setBase, []string{"factors.server.platform=[native,docker]"}, func(t *testing.T, e *Experiment) {
			if got := factorLevels(e, "server.platform"); !reflect.DeepEqual(got, []string{"native", "docker"}) {
				t.Errorf("factors = %v", e.Factors)
			}
			if findFactor(e.Factors, "server") != nil {
				t.Errorf("a factor \"server\" was created: %v", e.Factors)
			}
		}},
		{"dotted factor replaced", setQualified, []string{"factors.server.platform=[native,docker]"}, func(t *testing.T, e *Experiment) {
			if len(e.Factors) != 2 || !reflect.DeepEqual(factorLevels(e, "server.platform"), []string{"native", "docker"}) {
				t.Errorf("factors = %v", e.Factors)
			}
		}},
		{"dotted factor without a factors key", "name: x\nworkloads: [{name: tcp, type: net.tcp_stream}]\n", []string{"factors.client.platform=[docker]"}, func(t *testing.T, e *Experiment) {
			if !reflect.DeepEqual(e.Factors, []Factor{{Name: "client.platform", Levels: []string{"docker"}}}) {
				t.Errorf("factors = %v", e.Factors)
			}
		}},
		{"param factor", setBase, []string{"factors.param.message_size=[1KiB, 64KiB]"}, func(t *testing.T, e *Experiment) {
			if got := factorLevels(e, "param.message_size"); !reflect.DeepEqual(got, []string{"1KiB", "64KiB"}) {
				t.Errorf("factors = %v", e.Factors)
			}
		}},
		{"dotted baseline key", setQualified, []string{"factors.server.platform=[native,docker]", "baseline.server.platform=native"}, func(t *testing.T, e *Experiment) {
			if !reflect.DeepEqual(e.Baseline, map[string]string{"server.platform": "native"}) {
				t.Errorf("baseline = %v", e.Baseline)
			}
		}},
		{"dotted exclude key", setQualified, []string{"factors.server.platform=[native,docker]", "exclude=[{}]", "exclude.0.server.platform=native"}, func(t *testing.T, e *Experiment) {
			if !reflect.DeepEqual(e.Exclude, []map[string]string{{"server.platform": "native"}}) {
				t.Errorf("exclude = %v", e.Exclude)
			}
		}},
		{"whole mapping", setBase, []string{"baseline={platform: docker}"}, func(t *testing.T, e *Experiment) {
			if !reflect.DeepEqual(e.Baseline, map[string]string{"platform": "docker"}) {
				t.Errorf("baseline = %v", e.Baseline)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := parse(t, tc.file, tc.sets...)
			tc.check(t, e)
			// The file without the overrides still parses to its own values.
			if plain := parse(t, tc.file); plain.Repetitions != 3 && tc.file == setBase {
				t.Errorf("the base file changed")
			}
		})
	}
}

func TestSetProblems(t *testing.T) {
	tests := []struct {
		name string
		file string
		set  string
		want string // after "--set <expr>: "
	}{
		{"no =", setBase, "repetitions", "want path=value"},
		{"empty path", setBase, "=5", "want path=value"},
		{"invalid YAML value", setBase, "factors.platform=[docker", "is not valid YAML"},
		{"unknown list item", setBase, "workloads.nope.params.threads=2", `no list item "nope"`},
		{"index out of range", setBase, "workloads.5.params.threads=2", `no list item "5"`},
		{"descending into a scalar", setBase, "name.first=x", `cannot descend into "first": it is a single value`},
		{"descending into a param value", setBase, "workloads.cpu.params.max_prime.x=1", `cannot descend into "x"`},
		// Values that parse but fail validation are blamed on the --set.
		{"repetitions 0", setBase, "repetitions=0", "repetitions must be at least 1, got 0"},
		{"empty name", setBase, "name=", "name must not be empty"},
		{"unknown top-level key", setBase, "repetiton=5", `unknown key "repetiton"`},
		{"bad level", setBase, "factors.platform=[native,kvm]", `level "kvm" of platform`},
		{"bad param value", setBase, "workloads.cpu.params.threads=many", `parameter threads of cpu: "many" is not an integer`},
		{"unknown param", setBase, "workloads.cpu.params.thread=2", `unknown parameter "thread" for cpu.primes`},
		{"unknown factor", setBase, "factors.plattform=[docker]", `unknown factor "plattform"`},
		{"role factor without client/server", cpuOnly, "factors.server.platform=[docker]", `factor "server.platform" places the server role`},
		{"bad baseline", setBase, "baseline.platform=kvm", `baseline names level "kvm" of platform`},
		{"bad timeout", setBase, "timeout=soon", `timeout must be a duration`},
		{"workloads emptied", setBase, "workloads=[]", "workloads must be a non-empty list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.file), []string{tc.set}, testMachine)
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("want Problems, got %v", err)
			}
			if len(ps) != 1 {
				t.Fatalf("want 1 problem, got %d:\n%v", len(ps), err)
			}
			p := ps[0]
			if p.Set != tc.set || p.Line != 0 || p.Col != 0 || p.File != "test.yaml" {
				t.Errorf("problem %+v: want Set %q and no line", p, tc.set)
			}
			prefix := "--set " + tc.set + ": "
			if s := p.String(); !strings.HasPrefix(s, prefix) || !strings.Contains(s, tc.want) {
				t.Errorf("got %q\nwant %q...%q", s, prefix, tc.want)
			}
		})
	}
}

// A --set problem and problems of the file are reported together; the --set
// ones, having no line, first.
func TestSetProblemsWithFileProblems(t *testing.T) {
	got := problemsOf(t, "name: x\nwarmup: -1\nworkloads: [{type: cpu.primes}]\n", "nope", "workloads.cpu.primes.params.threads=0")
	want := []string{
		"--set nope: want path=value",
		"--set workloads.cpu.primes.params.threads=0: parameter threads of cpu.primes: 0 is out of range",
		"test.yaml:2:9: warmup must be at least 0",
	}
	if len(got) != len(want) {
		t.Fatalf("want %d problems, got:\n%s", len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: got %q, want %q...", i+1, got[i], want[i])
		}
	}
}
