package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Every comparison is like for like: ours and the reference tool run in
// the same placements, pinned the same way. The latency comparison is made
// pinned — client and server on one CPU, and on two — because unpinned, on
// two cores, a round trip takes ~8 µs or 50–80 µs depending on where the
// scheduler put the two ends, and the ratio would compare the scheduler's
// choices, not the tools.
func TestComparisonsLikeForLike(t *testing.T) {
	// The example nginx image: make test builds it (scripts/images.sh).
	nginx, err := filepath.Abs("../images/nginx.tar")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(nginx); err != nil {
		t.Fatalf("%v: run scripts/images.sh (make test does)", err)
	}
	text, err := experimentText(5, "3s", []string{"native/host", "docker/bridge"}, 2, nginx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := spec.Parse("bench.yaml", []byte(text), nil, spec.Machine{CPUs: 2})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	cells := e.Cells()
	// A cell's setting, without the workload: what must match.
	setting := func(c result.Cell) string {
		var s []string
		for k, v := range c.Factors {
			s = append(s, k+"="+v)
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	settings := func(workload string) []string {
		var s []string
		for _, c := range cells {
			if c.Workload == workload {
				s = append(s, setting(c))
			}
		}
		slices.Sort(s)
		return s
	}
	for _, cmp := range comparisons {
		ours, ref := settings(cmp.ours), settings(cmp.ref)
		if len(ours) == 0 || !slices.Equal(ours, ref) {
			t.Errorf("%s: %s runs in %q, %s in %q", cmp.name, cmp.ours, ours, cmp.ref, ref)
		}
		if !cmp.pinned {
			continue
		}
		same, cross := 0, 0
		for _, c := range cells {
			if c.Workload != cmp.ours {
				continue
			}
			s, cl := c.Factors["server.cpuset"], c.Factors["client.cpuset"]
			switch {
			case s == "" || cl == "" || s == vocab.NoLimit || cl == vocab.NoLimit:
				t.Errorf("%s: %s runs unpinned: %v", cmp.name, cmp.ours, c.Factors)
			case s == cl && !strings.ContainsAny(s, ",-"):
				same++
			case s != cl && !strings.ContainsAny(s+cl, ",-"):
				cross++
			}
		}
		if same == 0 || cross == 0 {
			t.Errorf("%s: %d same-core and %d cross-core cells, want both", cmp.name, same, cross)
		}
	}
	// One CPU: no cross-core case to make.
	text, err = experimentText(5, "3s", []string{"native/host"}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "cross-core") {
		t.Errorf("a cross-core case on one CPU:\n%s", text)
	}
}
