// Package advice turns a co-location campaign's measured interference
// (S0's design: targets beside neighbours, in one container or in two)
// into advice: which kinds of workload may share a container, may share a
// host in separate containers, or must be kept apart, at a tolerance judged
// with the 95% intervals; and, for a list of services, a packing into the
// fewest hosts and containers that keeps every predicted slowdown within
// it. It reads analysis rows and decides; it runs and stores nothing.
package advice

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Options says what to advise on.
type Options struct {
	// MaxSlowdown is the tolerance: the largest slowdown of a service's
	// headline metric allowed, as a fraction (0.10 = 10%).
	MaxSlowdown float64
	// ContainerCase and HostCase pick which same-container case backs
	// "share a container" and which separate-containers case "share a
	// host", when the campaign has several (with and without limits): a
	// part of its name ("cpus=1"). "" takes the one that allows the most
	// pairs.
	ContainerCase, HostCase string
	// Services to pack; none for the pairs' advice alone.
	Services []Service
}

// Service is one microservice to place and the kind of workload it is: a
// workload of the campaign (a target it measured).
type Service struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Verdict is how a measured pairing compares with the tolerance.
type Verdict string

const (
	// Within: the whole 95% interval of the slowdown is within the
	// tolerance.
	Within Verdict = "within"
	// Beyond: the whole interval is beyond it.
	Beyond Verdict = "beyond"
	// Uncertain: the interval straddles the tolerance (the mean alone
	// would decide either way); more repetitions would tell.
	Uncertain Verdict = "uncertain"
	// Unknown: the campaign did not measure this pairing, or without an
	// interval.
	Unknown Verdict = "unknown"
)

// Level is where two kinds of workload may run.
type Level string

const (
	ShareContainer Level = "share-container" // in one container
	ShareHost      Level = "share-host"      // on one host, in separate containers
	Apart          Level = "apart"           // on different hosts
)

// Judgement is one target beside one neighbour in one case, judged.
type Judgement struct {
	Case      string  `json:"case"`
	Target    string  `json:"target"`
	Neighbour string  `json:"neighbour"`
	Metric    string  `json:"metric"`
	IR        float64 `json:"ir"` // negative = worse
	// IRCI95 is IR's 95% interval; nil without one.
	IRCI95 *[2]float64 `json:"ir_ci95"`
	// WorstSlowdown is the slowdown at the interval's worse end (the mean's
	// without an interval), a fraction; 0 when the neighbour helped.
	WorstSlowdown float64 `json:"worst_slowdown"`
	Verdict       Verdict `json:"verdict"`
	N             int     `json:"n"`
}

// Pair is the advice for two kinds (the same kind twice included).
type Pair struct {
	A     string `json:"a"`
	B     string `json:"b"`
	Level Level  `json:"level"`
	// Why names the judgements that decided the level.
	Why string `json:"why"`
}

// Advice is the whole answer.
type Advice struct {
	Campaign       string   `json:"campaign"`
	MaxSlowdownPct float64  `json:"max_slowdown_pct"`
	Kinds          []string `json:"kinds"`
	Metrics        []string `json:"metrics"` // each kind's headline metric, in Kinds order
	ContainerCase  string   `json:"container_case"`
	HostCase       string   `json:"host_case"`
	// OtherCases are the co-location cases the advice did not use.
	OtherCases []string    `json:"other_cases,omitempty"`
	Judgements []Judgement `json:"judgements"`
	Pairs      []Pair      `json:"pairs"`
	Packing    *Packing    `json:"packing,omitempty"`
}

// ErrNotColocation is returned for a campaign without neighbours.
var ErrNotColocation = errors.New("the campaign has no co-location cells (factor neighbour with neighbours, packaging same-container and separate-containers): nothing to advise on")

// InputError is advice asked for with options the campaign cannot
// answer: a service of a kind it did not measure, a case that names no
// case. The caller's to report as bad input.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func badInput(format string, a ...any) error { return &InputError{fmt.Sprintf(format, a...)} }

// Advise judges every measured pairing and, with services, packs them.
func Advise(campaign string, rows []analysis.Row, o Options) (Advice, error) {
	if !(o.MaxSlowdown > 0 && o.MaxSlowdown < 10) {
		return Advice{}, badInput("max slowdown %v: want a fraction above 0 (0.1 = 10%%)", o.MaxSlowdown)
	}
	targets, headline := analysis.Headlines(rows)
	a := Advice{Campaign: campaign, MaxSlowdownPct: 100 * o.MaxSlowdown}
	byCase, packaging := judgeRows(rows, headline, o.MaxSlowdown)
	if len(byCase) == 0 {
		return Advice{}, ErrNotColocation
	}
	a.Kinds, a.Metrics = judgedKinds(targets, headline, byCase)
	if err := a.chooseCases(o, packaging, byCase); err != nil {
		return Advice{}, err
	}
	m := newMatrix(a, byCase)
	for i, x := range a.Kinds {
		for _, y := range a.Kinds[i:] {
			a.Pairs = append(a.Pairs, m.pair(x, y))
		}
	}
	if len(o.Services) > 0 {
		p, err := pack(o.Services, m, o.MaxSlowdown)
		if err != nil {
			return Advice{}, err
		}
		a.Packing = &p
	}
	return a, nil
}

// judgeRows judges, at tolerance t, each row of a target's headline
// metric beside one neighbour, and groups the judgements by co-location
// case; packaging is each case's packaging.
func judgeRows(rows []analysis.Row, headline map[string]analysis.Row, t float64) (byCase map[string][]Judgement, packaging map[string]string) {
	byCase, packaging = map[string][]Judgement{}, map[string]string{}
	for _, r := range rows {
		h, ok := headline[r.Workload]
		if !ok || !analysis.SameMetric(h.ID, r.ID) {
			continue
		}
		ant := r.Cell[vocab.FNeighbour]
		if ant == "" || ant == vocab.NeighbourNone || ant == vocab.NeighbourIdle || strings.Contains(ant, "+") {
			continue
		}
		ck := analysis.CaseOf(r.Cell)
		packaging[ck] = r.Cell[vocab.FPackaging]
		j := Judgement{Case: ck, Target: r.Workload, Neighbour: ant, Metric: r.Metric, N: r.N}
		j.judge(r, t)
		byCase[ck] = append(byCase[ck], j)
	}
	return byCase, packaging
}

// judgedKinds are the targets some case judged, in the campaign's order,
// with each one's headline metric.
func judgedKinds(targets []string, headline map[string]analysis.Row, byCase map[string][]Judgement) (kinds, metrics []string) {
	judged := map[string]bool{}
	for _, js := range byCase {
		for _, j := range js {
			judged[j.Target] = true
		}
	}
	for _, t := range targets {
		if judged[t] {
			kinds = append(kinds, t)
			metrics = append(metrics, headline[t].Metric)
		}
	}
	return kinds, metrics
}

// chooseCases sorts the cases by packaging, picks the one that backs
// "share a container" and the one that backs "share a host" (as o asks,
// else those allowing the most pairs), lists the others, and keeps the
// judgements of every case, same-container cases first.
func (a *Advice) chooseCases(o Options, packaging map[string]string, byCase map[string][]Judgement) error {
	var containerCases, hostCases []string
	for ck, p := range packaging {
		switch p {
		case vocab.PackSame:
			containerCases = append(containerCases, ck)
		case vocab.PackSeparate:
			hostCases = append(hostCases, ck)
		}
	}
	sort.Strings(containerCases)
	sort.Strings(hostCases)
	var err error
	if a.ContainerCase, err = pickCase("--container-case", containerCases, byCase, o.ContainerCase); err != nil {
		return err
	}
	if a.HostCase, err = pickCase("--host-case", hostCases, byCase, o.HostCase); err != nil {
		return err
	}
	cases := append(append([]string{}, containerCases...), hostCases...)
	for _, c := range cases {
		if c != a.ContainerCase && c != a.HostCase {
			a.OtherCases = append(a.OtherCases, c)
		}
	}
	for _, ck := range cases {
		a.Judgements = append(a.Judgements, byCase[ck]...)
	}
	return nil
}

// judge sets j's IR, worst slowdown and verdict from row r at tolerance t.
func (j *Judgement) judge(r analysis.Row, t float64) {
	if r.IR == nil {
		j.Verdict = Unknown
		return
	}
	j.IR = *r.IR
	if r.IRCI95 == nil || math.IsNaN(r.IRCI95[0]) || math.IsNaN(r.IRCI95[1]) {
		j.Verdict = Unknown
		j.WorstSlowdown = math.Max(0, -j.IR)
		return
	}
	ci := *r.IRCI95
	j.IRCI95 = &ci
	j.WorstSlowdown = math.Max(0, -ci[0])
	switch {
	case ci[0] >= -t:
		j.Verdict = Within
	case ci[1] < -t:
		j.Verdict = Beyond
	default:
		j.Verdict = Uncertain
	}
}

// pickCase chooses among cases of one packaging: the one whose name
// contains want, else the one allowing the most pairings (ties: by name).
func pickCase(flag string, cases []string, byCase map[string][]Judgement, want string) (string, error) {
	if len(cases) == 0 {
		return "", nil
	}
	if want != "" {
		var match []string
		for _, c := range cases {
			if strings.Contains(c, want) {
				match = append(match, c)
			}
		}
		if len(match) != 1 {
			return "", badInput("%s %q matches %d of the cases (%s): name one", flag, want, len(match), strings.Join(cases, "; "))
		}
		return match[0], nil
	}
	best, bestN := cases[0], -1
	for _, c := range cases {
		n := 0
		for _, j := range byCase[c] {
			if j.Verdict == Within {
				n++
			}
		}
		if n > bestN {
			best, bestN = c, n
		}
	}
	return best, nil
}

// matrix holds, per level, each ordered pair of kinds' judgement.
type matrix struct {
	container, host map[[2]string]Judgement
}

func newMatrix(a Advice, byCase map[string][]Judgement) matrix {
	m := matrix{container: map[[2]string]Judgement{}, host: map[[2]string]Judgement{}}
	for _, j := range byCase[a.ContainerCase] {
		m.container[[2]string{j.Target, j.Neighbour}] = j
	}
	for _, j := range byCase[a.HostCase] {
		m.host[[2]string{j.Target, j.Neighbour}] = j
	}
	return m
}

// allowed reports whether kinds x and y may meet at this level: both
// directions measured and within the tolerance.
func allowed(level map[[2]string]Judgement, x, y string) bool {
	a, oka := level[[2]string{x, y}]
	b, okb := level[[2]string{y, x}]
	return oka && okb && a.Verdict == Within && b.Verdict == Within
}

// slowdown is the worst plausible slowdown of kind x beside kind y at a
// level; ok is false when it is not allowed there.
func (m matrix) slowdown(container bool, x, y string) (float64, bool) {
	level := m.host
	if container {
		level = m.container
	}
	if !allowed(level, x, y) {
		return 0, false
	}
	return level[[2]string{x, y}].WorstSlowdown, true
}

func (m matrix) pair(x, y string) Pair {
	p := Pair{A: x, B: y}
	switch {
	case allowed(m.container, x, y):
		p.Level, p.Why = ShareContainer, "in one container: "+both(m.container, x, y)
	case allowed(m.host, x, y):
		p.Level, p.Why = ShareHost, "not in one container ("+both(m.container, x, y)+"); on one host in separate containers: "+both(m.host, x, y)
	default:
		p.Level = Apart
		p.Why = "in one container: " + both(m.container, x, y) + "; in separate containers: " + both(m.host, x, y)
	}
	return p
}

// both describes the judgements of x beside y and y beside x.
func both(level map[[2]string]Judgement, x, y string) string {
	one := func(t, n string) string {
		j, ok := level[[2]string{t, n}]
		if !ok {
			return t + " beside " + n + " not measured"
		}
		return t + " beside " + n + " " + j.Describe()
	}
	if x == y {
		return one(x, y)
	}
	return one(x, y) + ", " + one(y, x)
}

// Describe renders a judgement: "−12.3% [−20.1, −4.5] beyond".
func (j Judgement) Describe() string {
	s := fmt.Sprintf("%+.1f%%", 100*j.IR)
	if j.IRCI95 != nil {
		s += fmt.Sprintf(" [%+.1f, %+.1f]", 100*j.IRCI95[0], 100*j.IRCI95[1])
	} else {
		s += " (no interval)"
	}
	return s + " " + string(j.Verdict)
}
