package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Roles of the ping-pong system (S2, Kratzke 2015): the load generator calls
// ping, ping relays each request to pong, pong answers with size bytes.
const (
	rolePong = "pong"
	rolePing = "ping"
)

func init() {
	workload.Register(&workload.Spec{
		Type:       "http.pingpong",
		Summary:    "HTTP ping-pong microservices (S2): load generator -> ping -> pong, pong answers with size bytes",
		Params:     httpParams,
		Metrics:    httpMetrics,
		Histograms: []workload.Histogram{httpLatency},
		Roles:      []string{rolePong, rolePing, workload.Client},
		Run: map[string]workload.RunFunc{
			rolePong:        pongServer,
			rolePing:        pingServer,
			workload.Client: pingpongClient,
		},
		Smoke: map[string]string{"duration": "500ms", "size": "4KiB", "concurrency": "4"},
		Serves: workload.Serves{
			OneTCPPort: true, // its servers listen on the port they are given, and nothing else
		},
	})
	workload.Register(&workload.Spec{
		Type:       "http.get",
		Summary:    "ctrbench's HTTP load generator straight to pong (no ping hop): raw HTTP request/response cost",
		Params:     httpParams,
		Metrics:    httpMetrics,
		Histograms: []workload.Histogram{httpLatency},
		Roles:      []string{rolePong, workload.Client},
		Run: map[string]workload.RunFunc{
			rolePong: pongServer,
			workload.Client: func(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
				return loadGenerator(ctx, p, env, false)
			},
		},
		Smoke: map[string]string{"duration": "500ms", "size": "4KiB", "concurrency": "4"},
		Serves: workload.Serves{
			OneTCPPort: true, // its servers listen on the port they are given, and nothing else
		},
	})
}

// httpLatency declares the histogram of request latencies the load
// generator records and returns.
var httpLatency = workload.Histogram{Name: "latency", Unit: "µs", Doc: "latency of every correct request"}

var (
	httpParams = []workload.Param{
		workload.P("size", workload.Size, "1KiB", "bytes pong answers with (the message size m of S2)").Range(1, 16<<20),
		workload.P("duration", workload.Duration, "5s", "how long the load generator sends").Range(0.1, 86400),
		workload.P("concurrency", workload.Int, "8", "connections of the load generator (requests in flight at most)").Range(1, 4096),
		workload.P("rate", workload.Float, "0", "requests per second, open loop (latency from the intended send time: no coordinated omission); 0 = closed loop, as fast as responses come").Range(0, 1e7),
		workload.P("request_timeout", workload.Duration, "5s", "a request without a full response by then is an error").Range(0.001, 600),
	}
	httpMetrics = []workload.Metric{
		{Name: "requests_per_sec", Unit: "req/s", Better: result.Higher, Doc: "correct responses per second"},
		{Name: "transfer_rate", Unit: "MB/s", Better: result.Higher, Doc: "payload bytes of correct responses per second (S2's trans(m)), MB = 1e6 bytes"},
		{Name: "latency_p50", Unit: "ms", Better: result.Lower, Doc: "median request latency (open loop: from the intended send time)", Combine: workload.PercentileOf(httpLatency.Name, 50)},
		{Name: "latency_p90", Unit: "ms", Better: result.Lower, Doc: "90th percentile latency", Combine: workload.PercentileOf(httpLatency.Name, 90)},
		{Name: "latency_p99", Unit: "ms", Better: result.Lower, Doc: "99th percentile latency", Combine: workload.PercentileOf(httpLatency.Name, 99)},
		{Name: "latency_p999", Unit: "ms", Better: result.Lower, Doc: "99.9th percentile latency", Combine: workload.PercentileOf(httpLatency.Name, 99.9)},
		{Name: "errors", Unit: "count", Better: result.Lower, Doc: "failed requests: transport errors, timeouts, wrong status or body", Combine: workload.Count},
		{Name: "latency_clamped", Unit: "count", Better: result.Lower, Doc: "correct requests slower than the latency histogram's range (duration + 2 × request_timeout), counted at its top: 0 unless an open loop fell far behind", Combine: workload.Count},
	}
)

// payload is the body pong sends for a size: a pattern the client checks
// byte for byte at both ends and in the middle.
func payloadByte(i int) byte { return byte('a' + i%26) }

func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = payloadByte(i)
	}
	return b
}

// doneReport is what ping and pong answer to /done: how many requests they
// served, so the load generator can check nothing was lost or invented.
type doneReport struct {
	Served int64 `json:"served"`
	Pong   int64 `json:"pong,omitempty"` // ping's relay of pong's count
}

// serveHTTP runs handler on a listener bound to env.Bind until /done has
// been answered or ctx ends.
func serveHTTP(ctx context.Context, env workload.Env, handler func(done func()) http.Handler) error {
	ln, err := listen(ctx, env)
	if err != nil {
		return err
	}
	finished := make(chan struct{})
	var once sync.Once
	srv := &http.Server{Handler: handler(func() { once.Do(func() { close(finished) }) }), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	env.Ready(ln.Addr().String())
	select {
	case <-finished:
	case <-ctx.Done():
		srv.Close()
		return ctx.Err()
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	}
	shutdownGently(ctx, srv)
	return nil
}

// shutdownGently stops srv after the responses it is writing have gone
// out (the /done answer above all: Close would cut it off, and the
// client would read EOF), waiting at most 5 s.
func shutdownGently(ctx context.Context, srv *http.Server) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
}

func pongServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	var served atomic.Int64
	bodies := sync.Map{} // size -> []byte, built once per size
	err := serveHTTP(ctx, env, func(done func()) http.Handler {
		mux := http.NewServeMux()
		pong := func(w http.ResponseWriter, r *http.Request) {
			size, err := strconv.Atoi(r.URL.Query().Get("size"))
			if err != nil || size < 0 || size > 16<<20 {
				http.Error(w, "bad size", http.StatusBadRequest)
				return
			}
			b, ok := bodies.Load(size)
			if !ok {
				b, _ = bodies.LoadOrStore(size, payload(size))
			}
			w.Header().Set("Content-Length", strconv.Itoa(size))
			// Counted before the body goes out: once the client holds the
			// whole response it may ask for the count at once (/done).
			served.Add(1)
			_, _ = w.Write(b.([]byte))
		}
		// pong answers /ping as well, for load generators that call it
		// directly (http.get, http.wrk).
		mux.HandleFunc("/pong", pong)
		mux.HandleFunc("/ping", pong)
		mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(doneReport{Served: served.Load()})
			done()
		})
		return mux
	})
	return nil, "", err
}

func pingServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	if env.Target == "" {
		return nil, "", errors.New("ping has no pong to call (no target)")
	}
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, DisableCompression: true, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: p.Duration("request_timeout")}
	pongURL := "http://" + env.Target
	var served atomic.Int64
	err := serveHTTP(ctx, env, func(done func()) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("/ping", func(w http.ResponseWriter, r *http.Request) {
			resp, err := client.Get(pongURL + "/pong?" + r.URL.RawQuery)
			if err != nil {
				http.Error(w, "pong: "+err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				http.Error(w, "pong answered "+resp.Status, http.StatusBadGateway)
				return
			}
			if resp.ContentLength >= 0 {
				w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
			}
			// Counted before the body is relayed: the client may have it all,
			// and ask for the count, before io.Copy returns here.
			served.Add(1)
			_, _ = io.Copy(w, resp.Body)
		})
		mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
			rep := doneReport{Served: served.Load(), Pong: -1}
			if resp, err := client.Get(pongURL + "/done"); err == nil {
				var pr doneReport
				if json.NewDecoder(resp.Body).Decode(&pr) == nil {
					rep.Pong = pr.Served
				}
				resp.Body.Close()
			}
			_ = json.NewEncoder(w).Encode(rep)
			done()
		})
		return mux
	})
	return nil, "", err
}

func pingpongClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	return loadGenerator(ctx, p, env, true)
}

// loadGenerator drives GET /ping?size=N at env.Target for the duration, then
// calls /done and checks the server's count: through ping (viaPing), ping's
// and pong's counts; straight to pong, pong's.
func loadGenerator(ctx context.Context, p workload.Values, env workload.Env, viaPing bool) ([]result.Observation, string, error) {
	size := int(p.Int("size"))
	conc := int(p.Int("concurrency"))
	rate := p.Float("rate")
	dur := p.Duration("duration")
	timeout := p.Duration("request_timeout")
	path := "/ping?size=" + strconv.Itoa(size)
	want := payload(size)

	t, elapsed, err := runLoad(ctx, loadPlan{
		target: env.Target, path: path, size: size, want: want, conns: conc, dur: dur, rate: rate, timeout: timeout,
		newLat: func() *latencies { return newLatencies(p) },
	})
	if err != nil {
		return nil, "", err
	}
	ok, errs := t.ok, t.errs
	// Tell ping (and through it pong) that the run is over; their counts
	// must match what the client saw.
	rep, err := finish(ctx, &http.Client{Timeout: timeout}, "http://"+env.Target+"/done")
	if err != nil {
		return nil, "", fmt.Errorf("ending the run: %w", err)
	}
	// Every correct response went through ping and pong once; a failed
	// one may or may not have reached them.
	if !viaPing {
		rep.Pong = rep.Served
	}
	if ok > 0 && (rep.Served < ok || rep.Served > ok+errs || rep.Pong < rep.Served || rep.Pong > ok+errs) {
		return nil, "", fmt.Errorf("validation: client got %d correct responses (%d errors), ping served %d, pong served %d", ok, errs, rep.Served, rep.Pong)
	}
	return httpObservations(env, t, elapsed, dur)
}

// httpObservations are the load generator's metrics from its tally, after
// checking that it got correct responses and at most 1% errors.
func httpObservations(env workload.Env, t loadTally, elapsed, dur time.Duration) ([]result.Observation, string, error) {
	all, ok, bytes, errs, lastErr := t.lat, t.ok, t.bytes, t.errs, t.lastErr
	if ok == 0 {
		return nil, "", fmt.Errorf("no correct response in %s (%d errors; last: %s)", dur, errs, lastErr)
	}
	if errs*100 > ok+errs {
		return nil, "", fmt.Errorf("validation: %d of %d requests failed (last: %s)", errs, ok+errs, lastErr)
	}
	if err := keepHistogram(env, httpLatency, all.h); err != nil {
		return nil, "", err
	}
	obs := []result.Observation{
		{Metric: "requests_per_sec", Value: float64(ok) / elapsed.Seconds(), Unit: "req/s", Better: result.Higher},
		{Metric: "transfer_rate", Value: float64(bytes) / elapsed.Seconds() / 1e6, Unit: "MB/s", Better: result.Higher},
	}
	obs = append(obs, percentileObservations(httpMetrics, httpLatency, all.h)...)
	return append(obs,
		result.Observation{Metric: "errors", Value: float64(errs), Unit: "count", Better: result.Lower},
		result.Observation{Metric: "latency_clamped", Value: float64(all.clamped), Unit: "count", Better: result.Lower},
	), "", nil
}

func finish(ctx context.Context, client *http.Client, url string) (doneReport, error) {
	var rep doneReport
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return rep, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("reading ping's count: %w", err)
	}
	return rep, nil
}
