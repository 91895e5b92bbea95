package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/vocab"
	builtin "github.com/ctrbench/ctrbench/internal/workloads"
)

// delayLineCeiling measures what the userspace delay line carries: eight
// iperf3 flows (the reference tool) between two emulated hosts, through the
// kernel alone and through the delay lines with no delay, with 1, 10 and
// 100 ms of round trip, with no rate limit, reps times each; and the
// lines' CPU seconds per second of traffic. vocab.MaxDelayedRateBits, the
// fastest rate an experiment may ask with delay, must sit below the
// slowest of these ceilings.
func delayLineCeiling(ctx context.Context, reps int, secs int) error {
	fmt.Printf("\n== delay line: eight iperf3 flows between two emulated hosts, %d s, %d runs each, no rate limit\n", secs, reps)
	kernel, err := ceilingRuns(ctx, false, 0, reps, secs)
	if err != nil {
		return err
	}
	fmt.Printf("   %-28s %s\n", "kernel (veth, bridge)", summary(kernel.gbits))
	kernelMean := stats.Summarize(kernel.gbits).Mean
	slowest := 0.0
	for _, rtt := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		r, err := ceilingRuns(ctx, true, rtt, reps, secs)
		if err != nil {
			return err
		}
		m := stats.Summarize(r.gbits).Mean
		if slowest == 0 || m < slowest {
			slowest = m
		}
		fmt.Printf("   %-28s %s  (%.2f of the kernel's); the lines' CPU %.2f s per s, %.2f s per Gbit\n",
			"delay line, round trip +"+rtt.String(), summary(r.gbits), m/kernelMean, r.cpu/r.secs, r.cpu/(m*r.secs))
	}
	verdict := "ok"
	if slowest*1e9 < vocab.MaxDelayedRateBits {
		verdict = "MISSED"
	}
	fmt.Printf("   the fastest rate allowed with delay is %.1f Gbit/s; the slowest ceiling measured %.2f Gbit/s: %s\n", vocab.MaxDelayedRateBits/1e9, slowest, verdict)
	return nil
}

type ceiling struct {
	gbits     []float64
	cpu, secs float64 // the delay lines' CPU seconds over secs of traffic
}

func ceilingRuns(ctx context.Context, lines bool, rtt time.Duration, reps, secs int) (ceiling, error) {
	var out ceiling
	tok, err := netlab.NewToken()
	if err != nil {
		return out, err
	}
	lab, err := netlab.New(ctx, netlab.Config{Token: tok, Hosts: 2, Modes: []vocab.Network{vocab.Host}, DelayLine: lines})
	if err != nil {
		return out, err
	}
	defer lab.Close()
	// Set directly: an experiment may not ask for delay without a rate.
	if err := lab.SetUnderlay(vocab.Underlay{Delay: rtt}); err != nil {
		return out, err
	}
	before, _ := lab.DelayLines()
	for range reps {
		g, err := iperf3Between(ctx, lab, secs)
		if err != nil {
			return out, err
		}
		out.gbits = append(out.gbits, g)
	}
	after, _ := lab.DelayLines()
	out.cpu, out.secs = after.CPU-before.CPU, float64(reps*secs)
	return out, nil
}

// iperf3Between runs eight iperf3 flows from host 1 to host 2 and returns
// their receiver's Gbit/s.
func iperf3Between(ctx context.Context, lab *netlab.Lab, secs int) (float64, error) {
	addr := lab.HostAddr(vocab.Host, 2)
	srv := exec.CommandContext(ctx, "iperf3", "-s", "-1", "-B", addr, "-p", "15299")
	if err := netns.Start(lab.HostNS(2), srv); err != nil {
		return 0, fmt.Errorf("iperf3 server: %w", err)
	}
	defer srv.Wait()
	defer srv.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	var stdout bytes.Buffer
	// Eight flows, so no flow's window (the kernel's default buffers: 4 MiB
	// to send) is what limits the line at 100 ms.
	cli := exec.CommandContext(ctx, "iperf3", "-c", addr, "-p", "15299", "-P", "8", "-t", strconv.Itoa(secs), "-J")
	cli.Stdout = &stdout
	if err := netns.Start(lab.HostNS(1), cli); err != nil {
		return 0, fmt.Errorf("iperf3 client: %w", err)
	}
	if err := cli.Wait(); err != nil {
		return 0, fmt.Errorf("iperf3 client: %w: %s", err, clip(stdout.String()))
	}
	g, err := builtin.Iperf3Throughput(stdout.Bytes())
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, clip(stdout.String()))
	}
	return g, nil
}

func summary(xs []float64) string {
	s := stats.Summarize(xs)
	return fmt.Sprintf("%.2f Gbit/s [%.2f, %.2f]", s.Mean, s.CI95[0], s.CI95[1])
}

func clip(s string) string {
	if len(s) > 400 {
		return s[len(s)-400:]
	}
	return s
}
