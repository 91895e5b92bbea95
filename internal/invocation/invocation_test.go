package invocation

import (
	"reflect"
	"strings"
	"testing"
)

// What Args encodes, Parse decodes to the same invocation.
func TestRoundTrip(t *testing.T) {
	cases := []Agent{
		{Kind: Run, Workload: "cpu.primes"},
		{Kind: Run, Workload: "net.tcp_stream", Role: "server", Params: `{"duration":"1s"}`, Bind: "0.0.0.0",
			Counters: Counters{Cgroup: true, Netns: true}, WaitNet: true, DataDir: "/data", JoinCgroups: []string{"/sys/fs/cgroup/cpu/x", "/sys/fs/cgroup/memory/x"}},
		{Kind: Run, Workload: "net.tcp_stream", Role: "client", Target: "10.0.0.2:5001", WaitGo: true, Linger: true,
			Neighbours: []string{`cpu.primes={"duration":"1s"}`, "idle"}, Counters: Counters{Cgroup: true}},
		{Kind: Loop, Workload: "idle"},
		{Kind: Loop, Workload: "disk.fio", Params: `{"size":"64MiB"}`, DataDir: "/tmp/d", Counters: Counters{Netns: true}},
	}
	for _, a := range cases {
		got, err := Parse(a.Args())
		if err != nil {
			t.Fatalf("%v: %v", a.Args(), err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Errorf("args %q\n  decoded %+v\n     want %+v", a.Args(), got, a)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, args := range [][]string{
		{"agent", "wireguard"},
		{"agent", "run"},
		{"agent", "loop", "--workload", "idle", "--role", "server"},
		{"agent", "run", "--workload", "x", "--telemetry", "disk"},
		{"agent", "run", "--workload", "x", "extra"},
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("%s: accepted", strings.Join(args, " "))
		}
	}
}
