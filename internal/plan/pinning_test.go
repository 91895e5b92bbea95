package plan

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// TestPinned places every role of every copy for each pinning level, with
// more pairs than cores.
func TestPinned(t *testing.T) {
	server, client := Role{Name: "server"}, Role{Name: "client"}
	for _, tc := range []struct {
		pin   vocab.Pinning
		cpus  []int
		chain []Role
		pairs int
		want  string // per copy: the cores of its roles, chain order
	}{
		{vocab.PinNone, nil, []Role{server, client}, 2, "-/- -/-"},
		{vocab.PinSameCore, []int{0, 1}, []Role{server, client}, 3, "0/0 1/1 0/0"},
		{vocab.PinSeparate, []int{0, 1}, []Role{server, client}, 3, "0/1 0/1 0/1"},
		{vocab.PinSeparate, []int{2, 3, 5}, []Role{server, client}, 3, "2/3 5/2 3/5"},
		{vocab.PinSpread, []int{0, 1}, []Role{client}, 5, "0 1 0 1 0"},
		{vocab.PinSameCore, []int{0, 1}, []Role{client}, 3, "0 1 0"},
		{vocab.PinSpread, []int{1}, []Role{server, client}, 2, "1/1 1/1"},
	} {
		c := &Cell{Chain: tc.chain, Pairs: tc.pairs, Pinning: tc.pin, CPUs: tc.cpus}
		var copies []string
		for p := 0; p < tc.pairs; p++ {
			var cores []string
			for j, r := range c.Chain {
				got := c.Pinned(r, p, j)
				if got.Name != r.Name {
					t.Fatalf("the role changed: %+v", got)
				}
				cores = append(cores, map[bool]string{true: "-", false: got.Limits.Cpuset}[got.Limits.Cpuset == ""])
			}
			copies = append(copies, strings.Join(cores, "/"))
		}
		if got := strings.Join(copies, " "); got != tc.want {
			t.Errorf("%s on %v, %d copies of %d roles: %s, want %s", tc.pin, tc.cpus, tc.pairs, len(tc.chain), got, tc.want)
		}
		if tc.pin == vocab.PinSeparate && len(tc.cpus) >= 2 {
			for p := 0; p < tc.pairs; p++ {
				if a, b := c.Pinned(server, p, 0).Limits.Cpuset, c.Pinned(client, p, 1).Limits.Cpuset; a == b {
					t.Errorf("separate-cores put pair %d server and client both on %s", p, a)
				}
			}
		}
	}
}
