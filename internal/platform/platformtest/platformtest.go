// Package platformtest is the conformance suite every platform must pass:
// the contract the orchestrator relies on, checked against the real thing.
package platformtest

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Options say what of the platform to exercise.
type Options struct {
	Networks []vocab.Network // network modes to exercise (of Capabilities.Networks)
	Limits   bool            // whether cgroup limits must be applied and read back
	// Storages maps each storage level the platform supports to the
	// filesystem type the agent must see in its data directory ("" = any).
	Storages map[vocab.Storage]string
	// Caps are the platform's declared capabilities: the phases it says it
	// times must be timed.
	Caps platform.Capabilities
}

// Run runs the suite against p, already Prepared for campaign with the
// given networks.
func Run(t *testing.T, campaign string, p platform.Platform, o Options) {
	labels := map[string]string{platform.LabelManaged: "true", platform.LabelCampaign: campaign}
	n := 0
	name := func() string { n++; return campaign + "-i" + strconv.Itoa(n) }
	spec := func(network vocab.Network, inv invocation.Agent) platform.InstanceSpec {
		// On a cluster, the suite's instances share node 1: a client
		// on the host network reaches its server over loopback there.
		sp := platform.InstanceSpec{Name: name(), Agent: inv, Network: network, Labels: labels}
		if o.Caps.Cluster {
			sp.Host = 1
		}
		return sp
	}
	runAgent := func(workload, params string) invocation.Agent {
		return invocation.Agent{Kind: invocation.Run, Workload: workload, Params: params}
	}
	ctx := context.Background()

	for _, network := range o.Networks {
		t.Run("main/"+string(network), func(t *testing.T) {
			in := start(t, p, spec(network, runAgent("cpu.primes", `{"duration":"200ms","max_prime":"2000"}`)))
			res := readResult(t, in)
			if res.Status != result.OK {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			if len(res.Observations) == 0 || res.Observations[0].Value <= 0 {
				t.Fatalf("want a positive events_per_sec, got %+v", res.Observations)
			}
			ex := wait(t, in)
			if ex.Code != 0 {
				t.Fatalf("exit code %d, stderr %q", ex.Code, ex.Stderr)
			}
			checkTimings(t, in, o.Caps, vocab.Exit)
			if err := in.Remove(ctx); err != nil {
				t.Fatal(err)
			}
			checkTimings(t, in, o.Caps, vocab.Remove)
		})

		t.Run("failed-workload-is-a-result/"+string(network), func(t *testing.T) {
			in := start(t, p, spec(network, runAgent("no.such", `{}`)))
			res := readResult(t, in)
			if res.Status != result.Failed || res.Error == "" {
				t.Fatalf("want a failed result with a reason, got %+v", res)
			}
		})

		t.Run("exit-code-and-stderr/"+string(network), func(t *testing.T) {
			in := start(t, p, spec(network, runAgent("", ""))) // --workload is required
			drain(in)
			ex := wait(t, in)
			if ex.Code == 0 {
				t.Fatalf("want a non-zero exit code")
			}
			if ex.Stderr == "" {
				t.Fatalf("want the error on stderr")
			}
		})

		t.Run("remove-stops-a-running-agent/"+string(network), func(t *testing.T) {
			in := start(t, p, spec(network, runAgent("cpu.primes", `{"duration":"10m"}`)))
			time.Sleep(300 * time.Millisecond)
			begin := time.Now()
			if err := in.Remove(ctx); err != nil {
				t.Fatalf("remove: %v", err)
			}
			if err := in.Remove(ctx); err != nil {
				t.Fatalf("second remove must be harmless: %v", err)
			}
			if d := time.Since(begin); d > 20*time.Second {
				t.Fatalf("remove took %s", d)
			}
		})

		t.Run("stop-ends-a-loop/"+string(network), func(t *testing.T) {
			in := start(t, p, spec(network, invocation.Agent{Kind: invocation.Loop, Workload: "cpu.primes", Params: `{"duration":"50ms","max_prime":"1000"}`}))
			sc := bufio.NewScanner(in.Stdout())
			ready := false
			for !ready && sc.Scan() {
				ev, ok := result.ParseEvent(sc.Bytes())
				ready = ok && ev.Event == "ready"
			}
			if !ready {
				t.Fatal("loop never announced readiness")
			}
			time.Sleep(300 * time.Millisecond)
			if err := in.Stop(ctx); err != nil {
				t.Fatalf("stop: %v", err)
			}
			var res *result.Result
			for sc.Scan() {
				if ev, ok := result.ParseEvent(sc.Bytes()); ok && ev.Event == "result" {
					res = ev.Result
				}
			}
			if res == nil || len(res.Neighbours) != 1 || res.Neighbours[0].Iterations < 2 {
				t.Fatalf("after Stop, want the loop's result with its iterations, got %+v", res)
			}
			if ex := wait(t, in); ex.Code != 0 {
				t.Errorf("exit %d after SIGTERM: %s", ex.Code, ex.Stderr)
			}
		})

		t.Run("client-server/"+string(network), func(t *testing.T) {
			// Where the instances really are, with the platform's own
			// factors at their defaults (a nested child on "host" is in
			// its parent's namespace, a parent of its own each).
			seen := network
			if o.Caps.Seen != nil {
				seen = o.Caps.Seen(network, platform.Driver{Caps: o.Caps}.Options(nil))
			}
			bind := "127.0.0.1"
			if seen != vocab.Host {
				bind = "0.0.0.0"
			}
			params := `{"duration":"300ms","message_size":"64KiB"}`
			srvInv := runAgent("net.tcp_stream", params)
			srvInv.Role, srvInv.Bind = "server", bind
			srv := start(t, p, spec(network, srvInv))
			sc := bufio.NewScanner(srv.Stdout())
			var addr string
			for sc.Scan() {
				if ev, ok := result.ParseEvent(sc.Bytes()); ok && ev.Event == "ready" {
					addr = ev.Addr
					break
				}
			}
			if addr == "" {
				t.Fatalf("server never announced readiness")
			}
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("ready address %q: %v", addr, err)
			}
			host := bind
			if seen != vocab.Host {
				host = srv.IP()
				if host == "" {
					t.Fatalf("an instance on network %s must have an IP", network)
				}
			}
			cliInv := runAgent("net.tcp_stream", params)
			cliInv.Role, cliInv.Target = "client", net.JoinHostPort(host, port)
			cli := start(t, p, spec(network, cliInv))
			res := readResult(t, cli)
			if res.Status != result.OK {
				t.Fatalf("client: %s", res.Error)
			}
			var sres *result.Result
			for sc.Scan() {
				if ev, ok := result.ParseEvent(sc.Bytes()); ok && ev.Event == "result" {
					sres = ev.Result
				}
			}
			if sres == nil || sres.Status != result.OK {
				t.Fatalf("server result: %+v", sres)
			}
		})
	}

	for storage, fstype := range o.Storages {
		t.Run("storage/"+string(storage), func(t *testing.T) {
			s := spec(o.Networks[0], runAgent("cpu.primes", `{"duration":"50ms","max_prime":"1000"}`))
			s.Storage = storage
			res := readResult(t, start(t, p, s))
			if res.Status != result.OK {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			if res.Seen["data.dir"] == "" || (fstype != "" && res.Seen["data.fstype"] != fstype) {
				t.Errorf("storage %s: data dir %q on %q, want %q", storage, res.Seen["data.dir"], res.Seen["data.fstype"], fstype)
			}
		})
	}

	if o.Limits {
		t.Run("limits-are-applied", func(t *testing.T) {
			s := spec(o.Networks[0], runAgent("cpu.primes", `{"duration":"100ms","max_prime":"1000"}`))
			s.Limits = platform.Limits{CPUs: 0.5, Cpuset: "0", MemoryBytes: 64 << 20}
			want := map[string]string{"cgroup.cpus": "0.5", "cgroup.cpuset": "0", "cgroup.memory": strconv.Itoa(64 << 20)}
			if _, no := o.Caps.NoLimits["cpuset"]; no {
				s.Limits.Cpuset = "" // a limit the platform says it cannot apply
				delete(want, "cgroup.cpuset")
			}
			res := readResult(t, start(t, p, s))
			if res.Status != result.OK {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			for k, v := range want {
				if res.Seen[k] != v {
					t.Errorf("agent saw %s=%q, want %q (all: %v)", k, res.Seen[k], v, res.Seen)
				}
			}
		})
	}
}

// checkTimings checks that every phase the platform declares it times,
// up to last, was timed, in order and after Start was called.
func checkTimings(t *testing.T, in platform.Instance, caps platform.Capabilities, last vocab.Phase) {
	t.Helper()
	tm := in.Timings()
	if tm.Requested.IsZero() {
		t.Fatalf("timings: no request time")
	}
	prev, prevName := tm.Requested, "request"
	for _, ph := range vocab.Phases {
		if !slices.Contains(caps.Phases, ph) {
			continue
		}
		at, ok := tm.At[ph]
		if !ok {
			t.Errorf("timings: the platform declares phase %s but did not time it (%v)", ph, tm.At)
			continue
		}
		if at.Before(prev) {
			t.Errorf("timings: %s at %s is before %s at %s", ph, at.Format(time.RFC3339Nano), prevName, prev.Format(time.RFC3339Nano))
		}
		prev, prevName = at, string(ph)
		if ph == last {
			break
		}
	}
}

func start(t *testing.T, p platform.Platform, s platform.InstanceSpec) platform.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, err := p.Start(ctx, s)
	if err != nil {
		t.Fatalf("start %s: %v", s.Name, err)
	}
	t.Cleanup(func() { _ = in.Remove(context.Background()) })
	return in
}

func readResult(t *testing.T, in platform.Instance) *result.Result {
	t.Helper()
	done := make(chan *result.Result, 1)
	go func() {
		sc := bufio.NewScanner(in.Stdout())
		var res *result.Result
		for sc.Scan() {
			if ev, ok := result.ParseEvent(sc.Bytes()); ok && ev.Event == "result" {
				res = ev.Result
			}
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil {
			ex := wait(t, in)
			t.Fatalf("no result event (exit %d, stderr %q)", ex.Code, ex.Stderr)
		}
		return res
	case <-time.After(60 * time.Second):
		t.Fatalf("no result within 60s")
	}
	return nil
}

func drain(in platform.Instance) {
	sc := bufio.NewScanner(in.Stdout())
	for sc.Scan() {
	}
}

func wait(t *testing.T, in platform.Instance) platform.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := in.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return ex
}

// DecodeResult is exported for platform-specific tests reading raw output.
func DecodeResult(line []byte) (*result.Result, error) {
	var ev result.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, err
	}
	return ev.Result, nil
}

// NewCampaign is a fresh campaign ID for a conformance run of a platform
// on a real engine, and the labels its objects carry.
func NewCampaign(prefix string) (string, map[string]string) {
	b := make([]byte, 4)
	_, _ = crand.Read(b)
	id := prefix + "-" + hex.EncodeToString(b)
	return id, map[string]string{platform.LabelManaged: "true", platform.LabelCampaign: id}
}
