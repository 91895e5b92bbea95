// Command bench is the example "benchmark of yours" that docs/own-services.md
// and scripts/images.sh put into an image (local/myjob:1, /app/bench): it
// hashes 4 KiB blocks with SHA-256 for a while and prints its own numbers,
// as a user's program would, for ctrbench's exec workload to read.
//
//	bench [--json] [--duration 1s]
//
// With --json it prints one object:
//
//	{"result": {"ops_per_sec": 51234.5, "latency": {"p50_ms": 0.019, "p99_ms": 0.031}}, "ops": 51234}
//
// It checks its work before it reports: the digest of a known input against
// the published test vector, and the first block's digest recomputed.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

// FIPS 180-2's test vector: SHA-256("abc").
const abcDigest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

func main() {
	asJSON := flag.Bool("json", false, "print the result as one JSON object")
	dur := flag.Duration("duration", time.Second, "how long to hash")
	flag.Parse()
	if d := sha256.Sum256([]byte("abc")); hex.EncodeToString(d[:]) != abcDigest {
		fmt.Fprintln(os.Stderr, "bench: SHA-256 fails its test vector")
		os.Exit(1)
	}
	block := make([]byte, 4096)
	var lat []time.Duration
	var first [sha256.Size]byte
	start := time.Now()
	for time.Since(start) < *dur {
		t0 := time.Now()
		d := sha256.Sum256(block)
		lat = append(lat, time.Since(t0))
		if len(lat) == 1 {
			first = d
		}
		copy(block, d[:]) // each block depends on the one before
	}
	elapsed := time.Since(start)
	// The first digest again, from a fresh zero block.
	if again := sha256.Sum256(make([]byte, 4096)); len(lat) == 0 || again != first {
		fmt.Fprintln(os.Stderr, "bench: no block hashed, or a digest differs when computed again")
		os.Exit(1)
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
	r := map[string]any{
		"result": map[string]any{
			"ops_per_sec": float64(len(lat)) / elapsed.Seconds(),
			"latency":     map[string]float64{"p50_ms": ms(0.50), "p99_ms": ms(0.99)},
		},
		"ops": len(lat),
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	fmt.Printf("%d blocks in %s: %.0f ops/s, p50 %.4f ms, p99 %.4f ms\n", len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(), ms(0.5), ms(0.99))
}
