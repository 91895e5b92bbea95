package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var iperf3Tool = workload.Tool{Binary: "iperf3", Package: "iperf3"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "net.iperf3",
		Summary: "iperf3 TCP or UDP throughput, client to server, parsed from iperf3 --json",
		Params: []workload.Param{
			workload.P("protocol", workload.Enum, "tcp", "transport").OneOf("tcp", "udp"),
			workload.P("duration", workload.Duration, "5s", "test time; iperf3 takes whole seconds, so it is rounded up").Range(1, 86400),
			workload.P("parallel", workload.Int, "1", "parallel streams (-P)").Range(1, 128),
			workload.P("length", workload.Size, "0", "buffer length (-l); 0 keeps iperf3's default (128KiB TCP, path MTU UDP); iperf3 refuses UDP datagrams over 65507 bytes").Range(0, 16<<20),
			workload.P("bitrate", workload.String, "1G", "target bitrate (-b), UDP only; 0 for unlimited").
				Matching(`[0-9]+(\.[0-9]+)?[KMGkmg]?`, "a bitrate such as 0 (unlimited), 500K, 100M or 1.5G"),
		},
		Metrics: []workload.Metric{
			{Name: "throughput", Unit: "Gbit/s", Better: result.Higher, Doc: "bits the server received per second of its receive window (end.sum_received), TCP and UDP alike"},
			{Name: "retransmits", Unit: "count", Better: result.Lower, Doc: "TCP retransmissions by the sender", Combine: workload.Count},
			{Name: "jitter", Unit: "ms", Better: result.Lower, Doc: "UDP jitter, as the receiver measured it"},
			{Name: "loss", Unit: "%", Better: result.Lower, Doc: "UDP datagrams lost, as the receiver counted them", Combine: workload.WeightedBy("sent")},
			{Name: "sent", Unit: "datagrams", Better: result.Higher, Doc: "UDP datagrams the receiver expected (end.sum_received.packets): what loss is a share of", Combine: workload.Count},
		},
		Roles: []string{workload.Server, workload.Client},
		Tools: []workload.Tool{iperf3Tool},
		Run:   map[string]workload.RunFunc{workload.Server: iperf3Server, workload.Client: iperf3Client},
		Smoke: map[string]string{"duration": "1s", "bitrate": "100M"},
		Serves: workload.Serves{
			MorePorts: iperf3Ports,
		},
	})
}

// freePort asks the kernel for an unused port on bind. The port is released
// before iperf3 binds it; another process could take it in between, which
// then shows as a failed trial, not a wrong number.
func freePort(bind string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", bind, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// iperf3Ports: iperf3's server takes its control and TCP data connections
// on one port, and UDP datagrams on that port's number: with protocol udp
// a published server's UDP port too, which an engine must publish at the
// same number as its TCP port (iperf3's client sends to it).
func iperf3Ports(v workload.Values) []vocab.Port {
	if v.String("protocol") == "udp" {
		return []vocab.Port{{Proto: "udp"}}
	}
	return []vocab.Port{}
}

func iperf3Server(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(iperf3Tool)
	if err != nil {
		return nil, "", err
	}
	port := env.Port // a port its engine publishes (iperf3Ports)
	if port == 0 {
		if port, err = freePort(env.Bind); err != nil {
			return nil, "", err
		}
	}
	// --forceflush: iperf3 block-buffers stdout into a pipe, and we must
	// see "Server listening" the moment it is true.
	args := []string{"-s", "-1", "--forceflush", "-p", strconv.Itoa(port)}
	if env.Bind != "0.0.0.0" && env.Bind != "" {
		args = append(args, "-B", env.Bind)
	}
	cmd := toolCommand(ctx, path, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting iperf3: %w", err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if !ready && strings.Contains(line, "Server listening on") {
			ready = true
			env.Ready(net.JoinHostPort(env.Bind, strconv.Itoa(port)))
		}
	}
	err = cmd.Wait()
	raw := log.String() + errb.String()
	if !ready {
		return nil, raw, fmt.Errorf("iperf3 server never reported listening: %v", err)
	}
	if err != nil {
		return nil, raw, fmt.Errorf("iperf3 server: %w", err)
	}
	return nil, "", nil
}

// iperf3JSON is the part of iperf3 --json output we read.
type iperf3JSON struct {
	Error string `json:"error"`
	End   struct {
		SumSent     *iperf3Sum `json:"sum_sent"`
		SumReceived *iperf3Sum `json:"sum_received"`
	} `json:"end"`
}

// iperf3Sum is a summary of one side of the test. For UDP, end.sum_sent
// and end.sum_received exist from iperf3 3.11 on; the older end.sum holds
// the sender's bytes and rate beside the receiver's loss and jitter.
type iperf3Sum struct {
	BitsPerSecond float64 `json:"bits_per_second"`
	Bytes         float64 `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	Retransmits   *int64  `json:"retransmits"`  // TCP sender
	JitterMs      float64 `json:"jitter_ms"`    // UDP receiver
	LostPercent   float64 `json:"lost_percent"` // UDP receiver
	Packets       int64   `json:"packets"`      // UDP receiver: datagrams expected
}

func iperf3Client(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(iperf3Tool)
	if err != nil {
		return nil, "", err
	}
	host, port, err := net.SplitHostPort(env.Target)
	if err != nil {
		return nil, "", fmt.Errorf("target %q: %w", env.Target, err)
	}
	secs := int(math.Ceil(p.Duration("duration").Seconds()))
	args := []string{"-c", host, "-p", port, "-t", strconv.Itoa(secs), "-P", p.String("parallel"), "--json"}
	udp := p.String("protocol") == "udp"
	if udp {
		args = append(args, "-u", "-b", p.String("bitrate"))
	}
	if l := p.Int("length"); l > 0 {
		args = append(args, "-l", strconv.FormatInt(l, 10))
	}
	// iperf3 can wait forever on a dead server; bound it by the test time.
	cctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	stdout, raw, runErr := runTool(cctx, path, args...)
	return parseIperf3(stdout, raw, runErr, udp)
}

// parseIperf3 turns iperf3's JSON into observations; anything unexpected is
// an error with the raw output kept.
func parseIperf3(stdout []byte, raw string, runErr error, udp bool) ([]result.Observation, string, error) {
	var j iperf3JSON
	if err := json.Unmarshal(stdout, &j); err != nil {
		if runErr != nil {
			return nil, raw, runErr
		}
		return nil, raw, fmt.Errorf("iperf3 output is not the JSON expected: %w", err)
	}
	if j.Error != "" {
		return nil, raw, fmt.Errorf("iperf3: %s", j.Error)
	}
	if runErr != nil {
		return nil, raw, runErr
	}
	if udp {
		return iperf3UDP(j, raw)
	}
	if j.End.SumReceived == nil || j.End.SumReceived.Bytes <= 0 {
		return nil, raw, fmt.Errorf("iperf3 TCP result has no bytes received")
	}
	obs := []result.Observation{
		{Metric: "throughput", Value: j.End.SumReceived.BitsPerSecond / 1e9, Unit: "Gbit/s", Better: result.Higher},
	}
	if j.End.SumSent != nil && j.End.SumSent.Retransmits != nil {
		obs = append(obs, result.Observation{Metric: "retransmits", Value: float64(*j.End.SumSent.Retransmits), Unit: "count", Better: result.Lower})
	}
	return obs, "", nil
}

// Iperf3Throughput is a TCP run's throughput in Gbit/s, read from the JSON
// iperf3 -J printed as the net.iperf3 workload reads it (make bench's
// delay-line ceiling runs iperf3 itself between emulated hosts).
func Iperf3Throughput(stdout []byte) (float64, error) {
	obs, _, err := parseIperf3(stdout, "", nil, false)
	if err != nil {
		return 0, err
	}
	return obs[0].Value, nil
}

// iperf3UDP reads a UDP test: the rate is the receiver's bytes over the
// receiver's window, as for net.udp_stream, never the sender's rate scaled
// by the loss (the two windows and the datagrams still in flight at the end
// make those differ).
func iperf3UDP(j iperf3JSON, raw string) ([]result.Observation, string, error) {
	rcv, snd := j.End.SumReceived, j.End.SumSent
	if rcv == nil || snd == nil {
		return nil, raw, fmt.Errorf("iperf3 UDP result has no end.sum_received (the receiver's summary, reported by iperf3 3.11 and later)")
	}
	if rcv.Bytes <= 0 {
		return nil, raw, fmt.Errorf("iperf3 UDP: the server received no datagram (%.0f bytes sent)", snd.Bytes)
	}
	if rcv.Bytes > snd.Bytes {
		return nil, raw, fmt.Errorf("validation: iperf3's server received %.0f bytes, more than the sender sent (%.0f)", rcv.Bytes, snd.Bytes)
	}
	if rcv.Seconds <= 0 || !agrees(rcv.BitsPerSecond, rcv.Bytes*8/rcv.Seconds, 0.001, 0) {
		return nil, raw, fmt.Errorf("validation: iperf3 reports %.6g bit/s received, but %.0f bytes in %.6f s are %.6g bit/s",
			rcv.BitsPerSecond, rcv.Bytes, rcv.Seconds, rcv.Bytes*8/rcv.Seconds)
	}
	return []result.Observation{
		{Metric: "throughput", Value: rcv.BitsPerSecond / 1e9, Unit: "Gbit/s", Better: result.Higher},
		{Metric: "jitter", Value: rcv.JitterMs, Unit: "ms", Better: result.Lower},
		{Metric: "loss", Value: rcv.LostPercent, Unit: "%", Better: result.Lower},
		{Metric: "sent", Value: float64(rcv.Packets), Unit: "datagrams", Better: result.Higher},
	}, "", nil
}
