package platformtest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/platform"
	_ "github.com/ctrbench/ctrbench/internal/platform/drivers"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/testutil"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	"github.com/ctrbench/ctrbench/internal/vocab"
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

// A platform added from outside the tree: this file alone registers it,
// runs it through the conformance suite, and runs a campaign on it from an
// experiment file — validation, the resolver, the runner and the
// orchestrator learn of it from its driver, with no change anywhere else.

var toyCaps = platform.Capabilities{
	Networks: []vocab.Network{vocab.Host},
	Storages: []vocab.Storage{vocab.Layer},
	Phases:   []vocab.Phase{vocab.Start, vocab.Exit, vocab.Remove},
}

func init() {
	platform.Register(platform.Driver{
		Name: "toy", Summary: "plain child processes, for the architecture test", Noun: "toy process", Rank: 1000, Caps: toyCaps,
		Open: func(_ context.Context, cfg platform.Config) (platform.Platform, error) {
			return &toy{binary: cfg.Binary}, nil
		},
	})
}

type toy struct{ binary string }

func (p *toy) Name() string                                  { return "toy" }
func (p *toy) Prepare(context.Context, platform.Setup) error { return nil }
func (p *toy) HostAddr(vocab.Network) string                 { return "127.0.0.1" }
func (p *toy) Close(context.Context) error                   { return nil }
func (p *toy) Info() map[string]string                       { return map[string]string{"toy.binary": p.binary} }

func (p *toy) Start(_ context.Context, s platform.InstanceSpec) (platform.Instance, error) {
	requested := time.Now()
	dir, err := os.MkdirTemp("", "ctrbench-toy-")
	if err != nil {
		return nil, err
	}
	inv := s.Agent
	inv.DataDir = dir
	cmd := exec.Command(p.binary, inv.Args()...)
	cmd.Env = append(os.Environ(), inv.Env()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	in := &toyInstance{cmd: cmd, dir: dir, out: out, done: make(chan struct{}), at: map[vocab.Phase]time.Time{}, requested: requested}
	cmd.Stdout, cmd.Stderr = w, &in.stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	in.mark(vocab.Start)
	go func() { in.err = cmd.Wait(); in.mark(vocab.Exit); close(in.done) }()
	return in, nil
}

type toyInstance struct {
	cmd       *exec.Cmd
	dir       string
	out       io.ReadCloser
	stderr    bytes.Buffer // written by the process's copier until done
	done      chan struct{}
	err       error
	once      sync.Once
	mu        sync.Mutex
	requested time.Time
	at        map[vocab.Phase]time.Time
}

func (i *toyInstance) mark(ph vocab.Phase) { i.mu.Lock(); i.at[ph] = time.Now(); i.mu.Unlock() }
func (i *toyInstance) Stdout() io.Reader   { return i.out }
func (i *toyInstance) IP() string          { return "" }
func (i *toyInstance) NetNSPath() string   { return "" }
func (i *toyInstance) Timings() platform.Timings {
	i.mu.Lock()
	defer i.mu.Unlock()
	at := map[vocab.Phase]time.Time{}
	for k, v := range i.at {
		at[k] = v
	}
	return platform.Timings{Requested: i.requested, At: at}
}

func (i *toyInstance) Wait(ctx context.Context) (platform.Exit, error) {
	select {
	case <-i.done:
	case <-ctx.Done():
		return platform.Exit{Code: -1}, ctx.Err()
	}
	var ee *exec.ExitError
	code := 0
	if errors.As(i.err, &ee) {
		code = ee.ExitCode()
	}
	return platform.Exit{Code: code, Stderr: i.stderr.String()}, nil
}

func (i *toyInstance) Stop(context.Context) error {
	_ = i.cmd.Process.Signal(syscall.SIGTERM)
	return nil
}

func (i *toyInstance) Go(context.Context) error { return i.cmd.Process.Signal(syscall.SIGUSR1) }

func (i *toyInstance) Remove(context.Context) error {
	i.once.Do(func() {
		_ = i.cmd.Process.Kill()
		<-i.done
		i.out.Close()
		os.RemoveAll(i.dir)
		i.mark(vocab.Remove)
	})
	return nil
}

func TestToyPlatformConformance(t *testing.T) { conformToy(t, "toy", "test-toy", toyCaps) }

// conformToy opens the registered driver name and runs it through the
// conformance suite on the host network and the layer storage.
func conformToy(t *testing.T, name, campaign string, caps platform.Capabilities) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	d, ok := platform.Lookup(name)
	if !ok {
		t.Fatalf("the %s driver did not register", name)
	}
	p, err := d.Open(context.Background(), platform.Config{Binary: testutil.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	platformtest.Run(t, campaign, p, platformtest.Options{Networks: []vocab.Network{vocab.Host}, Storages: map[vocab.Storage]string{vocab.Layer: ""}, Caps: caps})
}

func TestToyPlatformRunsACampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	// Validation knows the toy from its capabilities: like any platform
	// without a namespace of its own, it cannot have a bridge.
	_, err := spec.Parse("toy.yaml", []byte("name: t\nfactors: {platform: [toy], network: [bridge]}\nworkloads: [{type: cpu.primes}]\n"), nil, spec.Machine{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("platform toy runs in the host's network only")) {
		t.Fatalf("want the toy refused a bridge, got %v", err)
	}
	e, err := spec.Parse("toy.yaml", []byte(`name: toy
repetitions: 2
factors: {platform: [native, toy]}
baseline: {platform: native}
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 200ms, max_prime: 2000}}
  - {name: tcp, type: net.tcp_stream, params: {duration: 200ms}}
`), nil, spec.Machine{})
	if err != nil {
		t.Fatal(err)
	}
	var trials []result.Trial
	var info map[string]string
	sum, err := orchestrator.Run(context.Background(), orchestrator.Config{
		Experiment: e, CampaignID: "test-toy", Cells: e.Cells(), Binary: testutil.Binary(t),
		Sink:     func(_ context.Context, tr result.Trial) error { trials = append(trials, tr); return nil },
		Prepared: func(i map[string]string) { info = i },
	})
	if err != nil || sum.OK != 8 || len(trials) != 8 {
		t.Fatalf("%+v %v", sum, err)
	}
	onToy := 0
	for _, tr := range trials {
		if tr.Status != result.OK {
			t.Errorf("trial %d: %s", tr.Seq, tr.Error)
		}
		if e.Cells()[tr.CellID-1].Factors["platform"] == "toy" {
			onToy++
			if tr.Observations[0].Value <= 0 {
				t.Errorf("trial %d measured %+v", tr.Seq, tr.Observations[0])
			}
		}
	}
	if onToy != 4 || info["toy.binary"] == "" {
		t.Errorf("%d trials on the toy platform, info %v", onToy, info)
	}
}
