package workloads

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var wrkTool = workload.Tool{Binary: "wrk", Package: "wrk"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "http.wrk",
		Summary: "wrk, the reference HTTP load generator, straight to pong: the yardstick for http.get",
		Params: []workload.Param{
			workload.P("size", workload.Size, "1KiB", "bytes pong answers with").Range(1, 16<<20),
			workload.P("duration", workload.Duration, "5s", "test time, whole seconds (wrk's unit, rounded up)").Range(1, 86400),
			workload.P("concurrency", workload.Int, "8", "connections (-c)").Range(1, 4096),
			workload.P("threads", workload.Int, "2", "wrk threads (-t), at most concurrency").Range(1, 256),
		},
		Metrics: []workload.Metric{
			{Name: "requests_per_sec", Unit: "req/s", Better: result.Higher, Doc: "wrk's Requests/sec"},
			{Name: "transfer_rate", Unit: "MB/s", Better: result.Higher, Doc: "payload bytes per second (requests/s × size; wrk's own Transfer/sec also counts headers), MB = 1e6 bytes"},
			{Name: "latency_p50", Unit: "ms", Better: result.Lower, Doc: "wrk's 50% latency", Combine: workload.PairsOnly},
			{Name: "latency_p90", Unit: "ms", Better: result.Lower, Doc: "wrk's 90% latency", Combine: workload.PairsOnly},
			{Name: "latency_p99", Unit: "ms", Better: result.Lower, Doc: "wrk's 99% latency", Combine: workload.PairsOnly},
			{Name: "errors", Unit: "count", Better: result.Lower, Doc: "socket errors plus non-2xx responses", Combine: workload.Count},
		},
		Roles: []string{rolePong, workload.Client},
		Tools: []workload.Tool{wrkTool},
		Run:   map[string]workload.RunFunc{rolePong: pongServer, workload.Client: wrkClient},
		Smoke: map[string]string{"duration": "1s", "size": "4KiB", "concurrency": "4"},
		Serves: workload.Serves{
			OneTCPPort: true, // its servers listen on the port they are given, and nothing else
		},
	})
}

func wrkClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(wrkTool)
	if err != nil {
		return nil, "", err
	}
	conc, threads := p.Int("concurrency"), p.Int("threads")
	if threads > conc {
		threads = conc
	}
	secs := int(math.Ceil(p.Duration("duration").Seconds()))
	size := p.Int("size")
	url := fmt.Sprintf("http://%s/ping?size=%d", env.Target, size)
	cctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	out, raw, runErr := runTool(cctx, path, "-t", strconv.FormatInt(threads, 10), "-c", strconv.FormatInt(conc, 10),
		"-d", strconv.Itoa(secs)+"s", "--latency", url)
	if runErr != nil {
		return nil, raw, runErr
	}
	w, err := parseWrk(string(out))
	if err != nil {
		return nil, raw, err
	}
	rep, err := finish(ctx, &http.Client{Timeout: 10 * time.Second}, "http://"+env.Target+"/done")
	if err != nil {
		return nil, raw, fmt.Errorf("ending the run: %w", err)
	}
	// pong served every request wrk completed, and at most the ones still
	// in flight when wrk stopped on top.
	if rep.Served < w.requests || rep.Served > w.requests+conc {
		return nil, raw, fmt.Errorf("validation: wrk completed %d requests, pong served %d", w.requests, rep.Served)
	}
	return []result.Observation{
		{Metric: "requests_per_sec", Value: w.rps, Unit: "req/s", Better: result.Higher},
		{Metric: "transfer_rate", Value: w.rps * float64(size) / 1e6, Unit: "MB/s", Better: result.Higher},
		{Metric: "latency_p50", Value: w.p50, Unit: "ms", Better: result.Lower},
		{Metric: "latency_p90", Value: w.p90, Unit: "ms", Better: result.Lower},
		{Metric: "latency_p99", Value: w.p99, Unit: "ms", Better: result.Lower},
		{Metric: "errors", Value: float64(w.errors), Unit: "count", Better: result.Lower},
	}, "", nil
}

type wrkResult struct {
	requests      int64
	rps           float64
	p50, p90, p99 float64 // ms
	errors        int64
}

var (
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkPct      = regexp.MustCompile(`(?m)^\s+(50|90|99)%\s+([0-9.]+)(us|ms|s)\b`)
	wrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// parseWrk reads wrk's text report; a report without its summary lines, or
// with errors in more than 1% of requests, is a failed trial.
func parseWrk(out string) (wrkResult, error) {
	var w wrkResult
	m := wrkRequests.FindStringSubmatch(out)
	r := wrkRPS.FindStringSubmatch(out)
	if m == nil || r == nil {
		return w, fmt.Errorf("wrk output has no summary (requests, Requests/sec): %s", lastLine(out))
	}
	w.requests, _ = strconv.ParseInt(m[1], 10, 64)
	w.rps, _ = strconv.ParseFloat(r[1], 64)
	got := map[string]bool{}
	for _, pm := range wrkPct.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(pm[2], 64)
		switch pm[3] {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		switch pm[1] {
		case "50":
			w.p50 = v
		case "90":
			w.p90 = v
		case "99":
			w.p99 = v
		}
		got[pm[1]] = true
	}
	if !got["50"] || !got["90"] || !got["99"] {
		return w, fmt.Errorf("wrk output has no latency distribution (run with --latency)")
	}
	if s := wrkSocket.FindStringSubmatch(out); s != nil {
		for _, x := range s[1:] {
			n, _ := strconv.ParseInt(x, 10, 64)
			w.errors += n
		}
	}
	if s := wrkNon2xx.FindStringSubmatch(out); s != nil {
		n, _ := strconv.ParseInt(s[1], 10, 64)
		w.errors += n
	}
	if w.requests == 0 || w.rps <= 0 {
		return w, fmt.Errorf("wrk completed no request")
	}
	if w.errors*100 > w.requests {
		return w, fmt.Errorf("validation: %d of %d wrk requests failed", w.errors, w.requests)
	}
	return w, nil
}
