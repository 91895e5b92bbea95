package workloads

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/workload"
)

// chain starts pong and ping in-process and returns ping's address.
func chain(t *testing.T, p workload.Values) (string, chan error, chan error) {
	t.Helper()
	start := func(fn workload.RunFunc, target string) (string, chan error) {
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, _, err := fn(context.Background(), p, workload.Env{Bind: "127.0.0.1", Target: target, Ready: func(a string) { ready <- a }})
			done <- err
		}()
		select {
		case a := <-ready:
			return a, done
		case err := <-done:
			t.Fatalf("server ended before ready: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("server not ready")
		}
		return "", nil
	}
	pong, pongDone := start(pongServer, "")
	ping, pingDone := start(pingServer, pong)
	return ping, pingDone, pongDone
}

func TestPingPongClosedAndOpenLoop(t *testing.T) {
	for _, c := range []struct {
		name string
		user map[string]string
	}{
		{"closed", map[string]string{"duration": "400ms", "size": "10", "concurrency": "4"}},
		{"open", map[string]string{"duration": "400ms", "size": "100KiB", "concurrency": "4", "rate": "200"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := values(t, "http.pingpong", c.user)
			ping, pingDone, pongDone := chain(t, p)
			obs, _, err := pingpongClient(context.Background(), p, workload.Env{Target: ping})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []chan error{pingDone, pongDone} {
				select {
				case err := <-d:
					if err != nil {
						t.Fatalf("server: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a server did not finish after /done")
				}
			}
			m := obsMap(obs)
			if m["requests_per_sec"] <= 0 || m["errors"] != 0 || m["latency_p50"] <= 0 || m["latency_p999"] < m["latency_p50"] {
				t.Fatalf("implausible %v", m)
			}
			// transfer rate is requests/s times the payload.
			size := float64(p.Int("size"))
			if r := m["transfer_rate"] * 1e6 / (m["requests_per_sec"] * size); r < 0.999 || r > 1.001 {
				t.Errorf("transfer_rate %v inconsistent with %v req/s of %v bytes", m["transfer_rate"], m["requests_per_sec"], size)
			}
			if c.name == "open" {
				// 200 req/s for 0.4 s: at most 80 requests (an open loop
				// never sends ahead of its schedule; a closed one would
				// send hundreds). Fewer is what a busy machine gives —
				// requests still waiting when the run ends are not
				// counted — so only the bound the schedule sets is
				// checked, with room for the rate's rounding.
				n := m["requests_per_sec"] * 0.4
				if n > 100 {
					t.Errorf("open loop sent about %.0f requests, at most 80 scheduled", n)
				}
				t.Logf("open loop: about %.0f of 80 scheduled requests completed", n)
			}
		})
	}
}

// A ping that answers with the wrong body must fail the trial.
func TestPingPongDetectsWrongBodies(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/done" {
			_, _ = w.Write([]byte(`{"served":0,"pong":0}`))
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("z", 10)))
	}))
	defer bad.Close()
	p := values(t, "http.pingpong", map[string]string{"duration": "200ms", "size": "10", "concurrency": "2"})
	_, _, err := pingpongClient(context.Background(), p, workload.Env{Target: strings.TrimPrefix(bad.URL, "http://")})
	if err == nil || !strings.Contains(err.Error(), "pong's pattern") {
		t.Fatalf("want a body validation failure, got %v", err)
	}
}

// A ping whose count disagrees with the client's must fail the trial.
func TestPingPongDetectsLostRequests(t *testing.T) {
	body := payload(10)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/done" {
			_, _ = w.Write([]byte(`{"served":1,"pong":1}`))
			return
		}
		_, _ = w.Write(body)
	}))
	defer bad.Close()
	p := values(t, "http.pingpong", map[string]string{"duration": "200ms", "size": "10", "concurrency": "2"})
	_, _, err := pingpongClient(context.Background(), p, workload.Env{Target: strings.TrimPrefix(bad.URL, "http://")})
	if err == nil || !strings.Contains(err.Error(), "validation: client got") {
		t.Fatalf("want a count validation failure, got %v", err)
	}
}

func TestParseWrk(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/wrk/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	w, err := parseWrk(read("ok.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if w.requests != 70716 || w.rps != 64244.46 || w.p50 != 0.072 || w.p90 != 2.77 || w.p99 != 7.05 || w.errors != 0 {
		t.Errorf("%+v", w)
	}
	for name, want := range map[string]string{"non2xx.txt": "72515 of 72515 wrk requests failed", "refused.txt": "no summary"} {
		if _, err := parseWrk(read(name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
}

func TestWrkAgainstPong(t *testing.T) {
	if _, err := lookTool(wrkTool); err != nil {
		t.Skip(err)
	}
	p := values(t, "http.wrk", map[string]string{"duration": "1s", "size": "1KiB", "concurrency": "4"})
	addr, done := serve(t, pongServer, p)
	obs, raw, err := wrkClient(context.Background(), p, workload.Env{Target: addr})
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := obsMap(obs); m["requests_per_sec"] <= 0 || m["errors"] != 0 {
		t.Errorf("%v", m)
	}
}
