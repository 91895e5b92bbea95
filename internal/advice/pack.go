package advice

import (
	"fmt"
	"sort"
	"strings"
)

// Packing places services on hosts, in containers.
type Packing struct {
	// Algorithm is how it was found; Exact says whether it is proven to
	// use the fewest hosts and then the fewest containers.
	Algorithm string `json:"algorithm"`
	Exact     bool   `json:"exact"`
	// Model is how a service's slowdown beside several others is
	// predicted from the pairs S0 measured.
	Model string `json:"model"`
	Hosts []Host `json:"hosts"`
}

// Host is one machine's containers.
type Host struct {
	Containers []Container `json:"containers"`
}

// Container is one container's services.
type Container struct {
	Services []Placed `json:"services"`
}

// Placed is a service where the packing put it, with its predicted
// slowdown (percent) at the worse ends of the intervals.
type Placed struct {
	Service
	PredictedSlowdownPct float64 `json:"predicted_slowdown_pct"`
}

// MaxExact is the most services the exact search packs; beyond, a greedy
// first fit.
const MaxExact = 10

const model = "additive: a service's predicted slowdown is the sum, over every other service in its container and on its host, of the slowdown S0 measured for its kind beside theirs at the worse end of the 95% interval (the container case for container mates, the host case for host mates); every pair met must be within the tolerance on its own, and the sum too"

// pack finds a packing of services under matrix m at tolerance t.
func pack(services []Service, m matrix, t float64) (Packing, error) {
	kinds := map[string]bool{}
	for k := range m.host {
		kinds[k[0]] = true
	}
	for k := range m.container {
		kinds[k[0]] = true
	}
	seen := map[string]bool{}
	for _, s := range services {
		if !kinds[s.Kind] {
			known := make([]string, 0, len(kinds))
			for k := range kinds {
				known = append(known, k)
			}
			sort.Strings(known)
			return Packing{}, badInput("service %s is of kind %q, which the campaign did not measure beside neighbours (kinds: %s)", s.Name, s.Kind, strings.Join(known, ", "))
		}
		if seen[s.Name] {
			return Packing{}, badInput("service %s is listed twice", s.Name)
		}
		seen[s.Name] = true
	}
	p := newPacker(services, m, t)
	var hosts [][][]int
	out := Packing{Model: model}
	if len(services) <= MaxExact {
		hosts = p.exact()
		out.Algorithm = fmt.Sprintf("exhaustive search over set partitions (dynamic programming over subsets of hosts, every split of a host into containers): exact for up to %d services", MaxExact)
		out.Exact = true
	} else {
		hosts = p.greedy()
		out.Algorithm = fmt.Sprintf("first fit, most constrained service first: more than %d services, so the fewest hosts is not proven", MaxExact)
	}
	for _, h := range hosts {
		var host Host
		for ci, c := range h {
			var ct Container
			for _, i := range c {
				ct.Services = append(ct.Services, Placed{Service: services[i], PredictedSlowdownPct: 100 * p.predicted(h, ci, i)})
			}
			host.Containers = append(host.Containers, ct)
		}
		out.Hosts = append(out.Hosts, host)
	}
	return out, nil
}

type packer struct {
	s []Service
	t float64
	// in[i][j] and beside[i][j]: service i's worst slowdown beside j in
	// one container and on one host; -1 where they may not meet so.
	in, beside [][]float64
}

func newPacker(services []Service, m matrix, t float64) packer {
	n := len(services)
	p := packer{s: services, t: t, in: make([][]float64, n), beside: make([][]float64, n)}
	for i := range services {
		p.in[i], p.beside[i] = make([]float64, n), make([]float64, n)
		for j := range services {
			p.in[i][j], p.beside[i][j] = -1, -1
			if s, ok := m.slowdown(true, services[i].Kind, services[j].Kind); ok {
				p.in[i][j] = s
			}
			if s, ok := m.slowdown(false, services[i].Kind, services[j].Kind); ok {
				p.beside[i][j] = s
			}
		}
	}
	return p
}

// predicted is service i's slowdown in container ci of host h, or inf
// when a pair it meets may not meet so.
func (p packer) predicted(h [][]int, ci, i int) float64 {
	sum := 0.0
	for di, d := range h {
		level := p.beside
		if di == ci {
			level = p.in
		}
		for _, j := range d {
			if j == i {
				continue
			}
			s := level[i][j]
			if s < 0 {
				return inf
			}
			sum += s
		}
	}
	return sum
}

const inf = 1e300

// fits reports whether every service of host h stays within tolerance.
func (p packer) fits(h [][]int) bool {
	for ci, c := range h {
		for _, i := range c {
			if p.predicted(h, ci, i) > p.t+1e-12 {
				return false
			}
		}
	}
	return true
}

// cost orders packings: fewer hosts first, then fewer containers.
type cost struct{ hosts, containers int }

func (a cost) less(b cost) bool {
	if a.hosts != b.hosts {
		return a.hosts < b.hosts
	}
	return a.containers < b.containers
}

// exact tries every way: for each subset of services that could be one
// host, its split into the fewest containers that fits (all set
// partitions of the subset), then the cheapest cover of all services by
// such hosts (dynamic programming over subsets).
func (p packer) exact() [][][]int {
	n := len(p.s)
	full := 1<<n - 1
	hostBest := make([][][]int, 1<<n) // subset -> its best split into containers, nil if none fits
	for mask := 1; mask <= full; mask++ {
		var members []int
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				members = append(members, i)
			}
		}
		var best [][]int
		partitions(members, func(h [][]int) {
			if (best == nil || len(h) < len(best)) && p.fits(h) {
				best = clone(h)
			}
		})
		hostBest[mask] = best
	}
	dp := make([]cost, 1<<n)
	choice := make([]int, 1<<n)
	for mask := 1; mask <= full; mask++ {
		dp[mask] = cost{1 << 30, 0}
		low := mask & -mask
		// The host holding the lowest service: every subset of mask that
		// contains it.
		for sub := mask; sub > 0; sub = (sub - 1) & mask {
			if sub&low == 0 || hostBest[sub] == nil || dp[mask^sub].hosts >= 1<<30 {
				continue
			}
			c := cost{dp[mask^sub].hosts + 1, dp[mask^sub].containers + len(hostBest[sub])}
			if c.less(dp[mask]) {
				dp[mask], choice[mask] = c, sub
			}
		}
	}
	var hosts [][][]int
	for mask := full; mask > 0; mask ^= choice[mask] {
		hosts = append(hosts, hostBest[choice[mask]])
	}
	return hosts
}

// partitions calls f with every split of items into non-empty groups.
func partitions(items []int, f func([][]int)) {
	var groups [][]int
	var rec func(i int)
	rec = func(i int) {
		if i == len(items) {
			f(groups)
			return
		}
		for g := range groups {
			groups[g] = append(groups[g], items[i])
			rec(i + 1)
			groups[g] = groups[g][:len(groups[g])-1]
		}
		groups = append(groups, []int{items[i]})
		rec(i + 1)
		groups = groups[:len(groups)-1]
	}
	rec(0)
}

func clone(h [][]int) [][]int {
	out := make([][]int, len(h))
	for i, c := range h {
		out[i] = append([]int(nil), c...)
	}
	return out
}

// greedy places the most constrained services first, each into the
// first container, else the first host, else a new host, where
// everything still fits.
func (p packer) greedy() [][][]int {
	n := len(p.s)
	conflicts := make([]int, n)
	for i := range p.s {
		for j := range p.s {
			if i != j && p.beside[i][j] < 0 {
				conflicts[i]++
			}
			if i != j && p.in[i][j] < 0 {
				conflicts[i]++
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return conflicts[order[a]] > conflicts[order[b]] })
	var hosts [][][]int
	for _, i := range order {
		placed := false
		for h := range hosts {
			for c := range hosts[h] {
				hosts[h][c] = append(hosts[h][c], i)
				if p.fits(hosts[h]) {
					placed = true
					break
				}
				hosts[h][c] = hosts[h][c][:len(hosts[h][c])-1]
			}
			if placed {
				break
			}
			hosts[h] = append(hosts[h], []int{i})
			if p.fits(hosts[h]) {
				placed = true
				break
			}
			hosts[h] = hosts[h][:len(hosts[h])-1]
		}
		if !placed {
			hosts = append(hosts, [][]int{{i}})
		}
	}
	return hosts
}
