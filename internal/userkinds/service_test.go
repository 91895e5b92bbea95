package userkinds

import (
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// runService runs a service's server and client as the runner would, on
// loopback, and returns the client's result and the server's.
func runService(t *testing.T, user map[string]string) (obs []result.Observation, raw string, err error, srvRaw string, srvErr error) {
	t.Helper()
	p := values(t, "service", user)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := make(chan string, 1)
	type res struct {
		raw string
		err error
	}
	srv := make(chan res, 1)
	senv := toolEnv(t)
	senv.Role, senv.Bind, senv.Ready = workload.Server, "127.0.0.1", func(a string) { ready <- a }
	go func() {
		_, r, e := serviceServer(ctx, p, senv)
		srv <- res{r, e}
	}()
	select {
	case addr := <-ready:
		cenv := toolEnv(t)
		cenv.Role, cenv.Target = workload.Client, addr
		obs, raw, err = serviceClient(ctx, p, cenv)
		s := <-srv
		return obs, raw, err, s.raw, s.err
	case s := <-srv:
		return nil, "", nil, s.raw, s.err
	}
}

// Redis driven by redis-benchmark through an exec client: every number
// read is the one redis-benchmark printed, and the server is gone after.
func TestServiceRedis(t *testing.T) {
	for _, tool := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/setup.sh installs it)", tool)
		}
	}
	s, _ := workload.Lookup("service")
	obs, raw, err, srvRaw, srvErr := runService(t, s.Smoke)
	if err != nil || srvErr != nil {
		t.Fatalf("client: %v\n%s\nserver: %v\n%s", err, raw, srvErr, srvRaw)
	}
	got := obsMap(obs)
	// The CSV redis-benchmark printed, in the raw output kept.
	var printed float64
	for _, line := range strings.Split(raw, "\n") {
		if i := strings.Index(line, `"PING_INLINE"`); i >= 0 {
			r, _ := csv.NewReader(strings.NewReader(line[i:])).Read()
			printed, _ = strconv.ParseFloat(r[1], 64)
		}
	}
	if printed <= 0 || got["ping_rps"] != printed {
		t.Errorf("ping_rps %v, redis-benchmark printed %v\n%s", got["ping_rps"], printed, raw)
	}
	if !strings.Contains(srvRaw, "Ready to accept connections") {
		t.Errorf("the server's log was not kept: %q", srvRaw)
	}
	if out, _ := exec.Command("pgrep", "-f", "redis-server.*16379").Output(); len(out) > 0 {
		t.Errorf("redis-server still running: %s", out)
	}
}

// busybox httpd driven by ctrbench's HTTP generator: the first GET sets
// the body every response must have.
func TestServiceHTTP(t *testing.T) {
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("busybox not installed (scripts/setup.sh installs it)")
	}
	www := t.TempDir()
	body := strings.Repeat("ctrbench ", 400)
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	obs, raw, err, srvRaw, srvErr := runService(t, map[string]string{
		"command": `["busybox","httpd","-f","-p","127.0.0.1:18081","-h","` + www + `"]`,
		"port":    "18081",
		"ready":   `{"http":"/index.html"}`,
		"client":  `{"type":"http.get","params":{"path":"/index.html","duration":"500ms","concurrency":"2"}}`,
	})
	if err != nil || srvErr != nil {
		t.Fatalf("client: %v\n%s\nserver: %v\n%s", err, raw, srvErr, srvRaw)
	}
	m := obsMap(obs)
	if m["requests_per_sec"] <= 0 || m["errors"] != 0 || m["latency_p50"] <= 0 {
		t.Errorf("implausible %v", m)
	}
	// Every correct response carried the file: bytes ÷ requests is its size.
	if per := m["transfer_rate"] * 1e6 / m["requests_per_sec"]; per < float64(len(body))-1 || per > float64(len(body))+1 {
		t.Errorf("%.1f bytes per response, want %d", per, len(body))
	}
}

// net.tcp_rr against busybox nc echoing through cat, and net.tcp_stream
// into busybox nc writing to /dev/null: real servers that speak none of
// ctrbench's protocols. Every echo is checked (its sequence number), and
// the stream's bytes are the ones the server's TCP acknowledged.
func TestServiceEchoAndSink(t *testing.T) {
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("busybox not installed (scripts/setup.sh installs it)")
	}
	obs, raw, err, srvRaw, srvErr := runService(t, map[string]string{
		"command": `["busybox","nc","-ll","-p","18084","-e","cat"]`,
		"port":    "18084",
		"client":  `{"type":"net.tcp_rr","params":{"duration":"300ms","request_size":"64B"}}`,
	})
	if err != nil || srvErr != nil {
		t.Fatalf("echo: client: %v\n%s\nserver: %v\n%s", err, raw, srvErr, srvRaw)
	}
	m := obsMap(obs)
	if m["transactions_per_sec"] < 100 || m["latency_p50"] <= 0 || m["latency_p99"] < m["latency_p50"] {
		t.Errorf("echo: implausible %v", m)
	}
	obs, raw, err, srvRaw, srvErr = runService(t, map[string]string{
		"command": `["busybox","nc","-ll","-p","18085","-e","sh","-c","cat >/dev/null"]`,
		"port":    "18085",
		"client":  `{"type":"net.tcp_stream","params":{"duration":"300ms","message_size":"64KiB"}}`,
	})
	if err != nil || srvErr != nil {
		t.Fatalf("sink: client: %v\n%s\nserver: %v\n%s", err, raw, srvErr, srvRaw)
	}
	m = obsMap(obs)
	// The acknowledgements end after the writes: the receiver's rate is
	// at most the sender's.
	if m["throughput"] <= 0 || m["throughput"] > m["sender_throughput"]*1.0001 {
		t.Errorf("sink: implausible %v", m)
	}
	// A server that is no echo (it answers with something else) fails
	// the run, naming the transaction.
	_, _, err, _, _ = runService(t, map[string]string{
		"command": `["busybox","nc","-ll","-p","18086","-e","sh","-c","yes | head -c 100000"]`,
		"port":    "18086",
		"client":  `{"type":"net.tcp_rr","params":{"duration":"300ms","request_size":"64B"}}`,
	})
	if err == nil || !strings.Contains(err.Error(), "response 0 carries sequence number") {
		t.Errorf("a server that is no echo: %v", err)
	}
}

// A server that never answers fails the trial with its log; one that
// dies mid-run says so.
func TestServiceFailures(t *testing.T) {
	_, _, _, srvRaw, srvErr := runService(t, map[string]string{
		"command": `["sh","-c","echo starting up; sleep 30"]`,
		"port":    "18082",
		"ready":   `{"tcp":"true","timeout":"300ms"}`,
		"client":  `{"type":"http.get","params":{"duration":"200ms"}}`,
	})
	if srvErr == nil || !strings.Contains(srvErr.Error(), "never became ready") || !strings.Contains(srvErr.Error(), "starting up") {
		t.Errorf("a server that never listens: %v (log %q)", srvErr, srvRaw)
	}
	_, _, _, _, srvErr = runService(t, map[string]string{
		"command": `["sh","-c","echo bad config >&2; exit 7"]`,
		"port":    "18083",
		"client":  `{"type":"http.get","params":{"duration":"200ms"}}`,
	})
	if srvErr == nil || !strings.Contains(srvErr.Error(), "exit status 7") || !strings.Contains(srvErr.Error(), "bad config") {
		t.Errorf("a server that exits at once: %v", srvErr)
	}
}

func TestServiceValidation(t *testing.T) {
	s, _ := workload.Lookup("service")
	for name, c := range map[string]struct {
		user map[string]string
		key  string
		want string
	}{
		"no port":                   {map[string]string{"command": `["x"]`, "client": `{"type":"http.get"}`}, "port", "port"},
		"no client":                 {map[string]string{"command": `["x"]`, "port": "80"}, "client", "needs a client"},
		"unknown client":            {map[string]string{"command": `["x"]`, "port": "80", "client": `{"type":"net.udp_rr"}`}, "client", "allowed: http.get (ctrbench's HTTP generator), net.tcp_rr (request/response against an echo server)"},
		"echo has no response size": {map[string]string{"command": `["x"]`, "port": "80", "client": `{"type":"net.tcp_rr","params":{"response_size":"1KiB"}}`}, "client", "response_size"},
		"bad client arg":            {map[string]string{"command": `["x"]`, "port": "80", "client": `{"type":"http.get","params":{"path":"index"}}`}, "client", "path"},
		"bad ready":                 {map[string]string{"command": `["x"]`, "port": "80", "client": `{"type":"http.get"}`, "ready": `{"udp":"true"}`}, "ready", "allowed: tcp, http, timeout"},
	} {
		_, errs := s.Resolve(c.user)
		if errs[c.key] == nil || !strings.Contains(errs[c.key].Error(), c.want) {
			t.Errorf("%s: errors %v, want %s to say %q", name, errs, c.key, c.want)
		}
	}
	v := values(t, "service", s.Smoke)
	if ms := s.MetricsFor(v); len(ms) != 2 || ms[0].Name != "ping_rps" {
		t.Errorf("an exec client's metrics are the service's: %+v", ms)
	}
}
