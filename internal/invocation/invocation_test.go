package invocation

import (
	"reflect"
	"slices"
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
		// A client of a published server with more published ports.
		{Kind: Run, Workload: "service", Role: "client", Target: "172.18.0.1:32768", Ports: map[string]string{"6379/tcp": "172.18.0.1:32769", "15201/udp": "127.0.0.1:32770"}},
		{Kind: Loop, Workload: "idle"},
		{Kind: Loop, Workload: "disk.fio", Params: `{"size":"64MiB"}`, DataDir: "/tmp/d", Counters: Counters{Netns: true}},
		// The two ends of a client/server neighbour in two instances.
		{Kind: Loop, Workload: "net.tcp_stream", Role: "server", Bind: "0.0.0.0", Port: 15201},
		{Kind: Loop, Workload: "net.tcp_stream", Role: "client", Target: "172.18.0.3:15201"},
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
		{"agent", "loop", "--workload", "idle", "--root", "/img"}, // a user's image root: run only
		{"agent", "run", "--workload", "x", "--telemetry", "disk"},
		{"agent", "run", "--workload", "x", "extra"},
		{"agent", "run", "--workload", "x", "--ports", "6379=1.2.3.4:5"},
		{"agent", "run", "--workload", "x", "--ports", "6379/tcp=1.2.3.4"},
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("%s: accepted", strings.Join(args, " "))
		}
	}
}

// A user's image's environment, as a host process or LXC container gets
// it: the image's own, its WORKDIR and command for the agent, PATH as a
// container's when the image sets none.
func TestImageEnv(t *testing.T) {
	got := ImageEnv([]string{"A=1"}, "/data", []string{"redis-server", "--port", "6379"}, "/usr/bin:/bin")
	want := []string{"A=1", ImageWorkdirEnv + "=/data", ImageCommandEnv + `=["redis-server","--port","6379"]`, "PATH=/usr/bin:/bin"}
	if !slices.Equal(got, want) {
		t.Errorf("ImageEnv = %q, want %q", got, want)
	}
	if got := ImageEnv([]string{"PATH=/opt/bin"}, "", nil, "/bin"); !slices.Equal(got, []string{"PATH=/opt/bin", ImageWorkdirEnv + "="}) {
		t.Errorf("an image's own PATH and no command: %q", got)
	}
}
