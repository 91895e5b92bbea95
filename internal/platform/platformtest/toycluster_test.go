package platformtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// A cluster platform added from outside the tree, the shape a Kubernetes
// platform takes: this file alone registers it (its nodes are the
// machine's, each instance a toy process told its node; the links between
// nodes "shaped" by recording the rate asked), runs it through the
// conformance suite, and runs a campaign on two of its nodes with an
// underlay rate — validation, the planner, the runner and the orchestrator
// learn that it brings its own nodes from its driver's Cluster, with no
// change anywhere else.

// toyNodes is the most nodes the toy cluster gives a cell.
const toyNodes = 3

var toyClusterCaps = platform.Capabilities{
	Networks: []vocab.Network{vocab.Host},
	Net:      platform.Net{OwnNetNS: true}, // a node's host network is the node's, not the machine's
	Storages: []vocab.Storage{vocab.Layer},
	Phases:   []vocab.Phase{vocab.Start, vocab.Exit, vocab.Remove},
	Cluster:  toyCluster{},
}

// toyCluster declares the cluster; Shape records the rate on the open
// platform.
type toyCluster struct{}

func (toyCluster) MaxNodes() int      { return toyNodes }
func (toyCluster) RoutesSettle() bool { return false }
func (toyCluster) Delays() bool       { return false }
func (toyCluster) Shape(p platform.Platform, u vocab.Underlay) error {
	rate := u.Rate
	c, ok := p.(*toyClusterPlatform)
	if !ok {
		return fmt.Errorf("not an open toy cluster (%T)", p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rates = append(c.rates, rate)
	return nil
}

func init() {
	platform.Register(platform.Driver{
		Name: "toycluster", Summary: "toy processes on emulated nodes, for the architecture test", Noun: "toy task", Rank: 1001, Caps: toyClusterCaps,
		Open: func(_ context.Context, cfg platform.Config) (platform.Platform, error) {
			return &toyClusterPlatform{toy: toy{binary: cfg.Binary}, nodes: map[string]int{}}, nil
		},
	})
}

// toyClusterPlatform starts toy processes, noting the node each was
// placed on (InstanceSpec.Host; 1 when not said).
type toyClusterPlatform struct {
	toy
	mu    sync.Mutex
	nodes map[string]int // instance name → node
	rates []vocab.Rate   // what Shape was asked, trial by trial
}

func (p *toyClusterPlatform) Name() string { return "toycluster" }

func (p *toyClusterPlatform) Start(ctx context.Context, s platform.InstanceSpec) (platform.Instance, error) {
	node := s.Host
	if node < 1 || node > toyNodes {
		return nil, fmt.Errorf("no node %d: the toy cluster has nodes 1 to %d", node, toyNodes)
	}
	in, err := p.toy.Start(ctx, s)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.nodes[s.Name] = node
	p.mu.Unlock()
	return nodeInstance{in}, nil
}

// nodeInstance is a toy process at its node's address.
type nodeInstance struct{ platform.Instance }

func (nodeInstance) IP() string { return "127.0.0.1" }

func (n nodeInstance) Go(ctx context.Context) error { return n.Instance.(platform.Goer).Go(ctx) }

func TestToyClusterConformance(t *testing.T) {
	conformToy(t, "toycluster", "test-toyc", toyClusterCaps)
}

func TestToyClusterRunsACampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	// Validation and the planner know it from its Cluster: at most
	// toyNodes nodes, and delay is for ctrbench's emulated hosts, not a
	// cluster's links.
	for file, want := range map[string]string{
		"name: t\nfactors: {platform: [toycluster], hosts: [4]}\nworkloads: [{type: cpu.primes}]\n":                                  "at most 3 nodes",
		"name: t\nfactors: {platform: [toycluster], hosts: [2], underlay: [\"1gbit delay 1ms\"]}\nworkloads: [{type: net.tcp_rr}]\n": "shapes in rate but does not delay",
	} {
		e, err := spec.Parse("toyc.yaml", []byte(file), nil, spec.Machine{})
		if err == nil {
			_, err = plan.ResolveAll(e, e.Cells())
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want an error saying %q, got %v", file, want, err)
		}
	}
	e, err := spec.Parse("toyc.yaml", []byte(`name: toyc
repetitions: 2
factors: {platform: [toycluster], hosts: [2], underlay: [100mbit]}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 200ms}}
`), nil, spec.Machine{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := platform.Lookup("toycluster")
	p, err := d.Open(context.Background(), platform.Config{Binary: testutil.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	opened := p.(*toyClusterPlatform)
	var trials []result.Trial
	sum, err := orchestrator.Run(context.Background(), orchestrator.Config{
		Experiment: e, CampaignID: "test-toyc", Cells: e.Cells(), Binary: testutil.Binary(t),
		Sink:      func(_ context.Context, tr result.Trial) error { trials = append(trials, tr); return nil },
		Platforms: map[string]platform.Platform{"toycluster": p},
	})
	if err != nil || sum.OK != 2 || len(trials) != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
	for _, tr := range trials {
		if tr.Status != result.OK || len(tr.Observations) == 0 || tr.Observations[0].Value <= 0 {
			t.Errorf("trial %d: %s %s %+v", tr.Seq, tr.Status, tr.Error, tr.Observations)
		}
	}
	used := map[int]int{}
	for _, n := range opened.nodes {
		used[n]++
	}
	// Each trial's server and client, on the cell's two nodes.
	if used[1] != 2 || used[2] != 2 {
		t.Errorf("instances per node %v, want 2 on node 1 and 2 on node 2 (server and client, two trials)", used)
	}
	if len(opened.rates) != 2 || opened.rates[0] != opened.rates[1] || opened.rates[0].String() != "100mbit" {
		t.Errorf("the links between nodes were shaped %v, want 100mbit before each of 2 trials", opened.rates)
	}
}
