package orchestrator

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/native"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/testutil"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	"github.com/ctrbench/ctrbench/internal/vocab"
	_ "github.com/ctrbench/ctrbench/internal/workloads"
)

func experiment(t *testing.T, src string) *spec.Experiment {
	t.Helper()
	e, err := spec.Parse("test.yaml", []byte(src), nil, spec.Machine{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type sink struct {
	mu     sync.Mutex
	trials []result.Trial
	err    error
}

func (s *sink) record(_ context.Context, t result.Trial) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trials = append(s.trials, t)
	return s.err
}

func options(e *spec.Experiment, ps map[string]platform.Platform, s *sink) Config {
	return Config{Experiment: e, CampaignID: "test-orch", Cells: e.Cells(), Platforms: ps, Sink: s.record, CleanupTimeout: 10 * time.Second}
}

// Real agents on the native platform: every planned trial is handed to the
// sink, in order, warm-ups flagged, results ok.
func TestRunNative(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	e := experiment(t, `name: n
seed: 3
repetitions: 2
warmup: 1
factors:
  param.max_prime: [1000, 2000]
workloads:
  - {type: cpu.primes, params: {duration: 100ms}}
  - {type: net.tcp_stream, params: {duration: 100ms}}
`)
	s := &sink{}
	sum, err := Run(context.Background(), options(e, map[string]platform.Platform{"native": native.New(testutil.Binary(t))}, s))
	if err != nil {
		t.Fatal(err)
	}
	// 3 cells (tcp has no max_prime, so it is one cell) x 3 trials.
	if sum.Planned != 9 || sum.Ran != 9 || sum.OK != 9 || len(s.trials) != 9 {
		t.Fatalf("summary %+v, %d trials", sum, len(s.trials))
	}
	warm := 0
	for i, tr := range s.trials {
		if tr.Seq != i+1 {
			t.Errorf("trial %d has seq %d", i, tr.Seq)
		}
		if tr.Status != result.OK || len(tr.Observations) == 0 {
			t.Errorf("trial %d: %s %s", tr.Seq, tr.Status, tr.Error)
		}
		if tr.Warmup {
			warm++
			if i >= 3 {
				t.Errorf("warm-up at position %d", i)
			}
		}
		if tr.Ended.Before(tr.Started) {
			t.Errorf("trial %d ends before it starts", tr.Seq)
		}
		// cpu.primes returns its event times, tcp_stream no histogram.
		primes := len(tr.Observations) > 0 && tr.Observations[0].Metric == "events_per_sec"
		if len(tr.Histograms) != map[bool]int{true: 1}[primes] || primes && tr.Histograms[0].Metric != "latency" {
			t.Errorf("trial %d (primes %v) has histograms %+v", tr.Seq, primes, tr.Histograms)
		}
	}
	if warm != 3 {
		t.Errorf("%d warm-ups, want 3", warm)
	}
}

// A fake platform, for failure paths a real engine does not produce on
// demand. Its driver declares container-like capabilities; the tests hand
// the orchestrator the instance to use.
func init() {
	platform.Register(platform.Driver{
		Name: "fake", Noun: "fake container", Rank: 100,
		Caps: platform.Capabilities{Networks: []vocab.Network{vocab.Host}, Net: platform.Net{OwnNetNS: true}, OwnCgroup: true, Storages: []vocab.Storage{vocab.Layer}},
		Open: func(context.Context, platform.Config) (platform.Platform, error) {
			return nil, errors.New("the fake platform is given to the orchestrator, never opened")
		},
	})
}

type fake struct {
	startErr error
	// failStarts: the first so many Starts fail as startErr does.
	failStarts int
	starts     int
	exit       platform.Exit
	waitErr    error // the engine does not answer Wait
	stdout     string
	closed     bool
	names      []string // the instances asked for, in order
}

func (f *fake) Name() string                                  { return "fake" }
func (f *fake) Prepare(context.Context, platform.Setup) error { return nil }
func (f *fake) HostAddr(vocab.Network) string                 { return "127.0.0.1" }
func (f *fake) Close(context.Context) error                   { f.closed = true; return nil }
func (f *fake) Info() map[string]string                       { return nil }
func (f *fake) Start(_ context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	f.starts++
	f.names = append(f.names, spec.Name)
	if f.startErr != nil && (f.failStarts == 0 || f.starts <= f.failStarts) {
		return nil, f.startErr
	}
	return &fakeInstance{out: strings.NewReader(signed(f.stdout, spec.Agent.Key)), exit: f.exit, waitErr: f.waitErr}, nil
}

type fakeInstance struct {
	out     io.Reader
	exit    platform.Exit
	waitErr error
}

func (i *fakeInstance) Stdout() io.Reader                           { return i.out }
func (i *fakeInstance) Wait(context.Context) (platform.Exit, error) { return i.exit, i.waitErr }
func (i *fakeInstance) IP() string                                  { return "" }
func (i *fakeInstance) NetNSPath() string                           { return "" }
func (i *fakeInstance) Remove(context.Context) error                { return nil }
func (i *fakeInstance) Stop(context.Context) error                  { return nil }
func (i *fakeInstance) Timings() platform.Timings                   { return platform.Timings{} }

const oneFakeCell = `name: f
repetitions: 2
factors: {platform: [fake]}
workloads: [{type: cpu.primes}]
`

func TestFailuresAreTrials(t *testing.T) {
	retryPause = 0
	for name, c := range map[string]struct {
		f    *fake
		want string
		by   string
	}{
		"start fails":     {&fake{startErr: errors.New("OCI runtime create failed")}, "starting main on fake: OCI runtime create failed", result.FailedByPlatform},
		"exit, no result": {&fake{exit: platform.Exit{Code: 137, Stderr: "Killed"}, stdout: "some noise\n"}, "exited with code 137 without a result: Killed | some noise", result.FailedByWorkload},
		"failed result":   {&fake{stdout: `{"event":"result","result":{"status":"failed","error":"validation: wrong"}}` + "\n"}, "validation: wrong", result.FailedByWorkload},
		"engine gone":     {&fake{waitErr: errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")}, "the platform could not say why: Cannot connect to the Docker daemon", result.FailedByPlatform},
	} {
		t.Run(name, func(t *testing.T) {
			s := &sink{}
			e := experiment(t, oneFakeCell)
			sum, err := Run(context.Background(), options(e, map[string]platform.Platform{"fake": c.f}, s))
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failed != 2 || len(s.trials) != 2 {
				t.Fatalf("the campaign must go on: %+v", sum)
			}
			for _, tr := range s.trials {
				if tr.Status != result.Failed || !strings.Contains(tr.Error, c.want) || tr.FailedBy != c.by {
					t.Errorf("trial %d: %s by %s %q, want failed by %s with %q", tr.Seq, tr.Status, tr.FailedBy, tr.Error, c.by, c.want)
				}
				// The platform's failures were tried again (retries: 1
				// by default) and both attempts recorded; the workload's
				// never.
				if want := map[string]int{result.FailedByPlatform: 1, result.FailedByWorkload: 0}[c.by]; len(tr.Attempts) != want {
					t.Errorf("trial %d: %d earlier attempts, want %d", tr.Seq, len(tr.Attempts), want)
				}
			}
			if !c.f.closed {
				t.Error("platform not closed")
			}
		})
	}
}

// A retry names its instances anew: the engine may have created the first
// attempt's container although the call timed out, and its name is then
// taken. The first attempt keeps the plain name.
func TestRetryNamesItsInstancesAnew(t *testing.T) {
	retryPause = 0
	f := &fake{startErr: errors.New("context deadline exceeded"), failStarts: 1, stdout: `{"event":"result","result":{"status":"ok"}}` + "\n"}
	s := &sink{}
	e := experiment(t, "name: f\nrepetitions: 1\nfactors: {platform: [fake]}\nworkloads: [{type: cpu.primes}]\n")
	if _, err := Run(context.Background(), options(e, map[string]platform.Platform{"fake": f}, s)); err != nil {
		t.Fatal(err)
	}
	if len(s.trials) != 1 || s.trials[0].Status != result.OK || len(s.trials[0].Attempts) != 1 {
		t.Fatalf("want one ok trial after one failed attempt: %+v", s.trials)
	}
	if len(f.names) != 2 || f.names[0] == f.names[1] || !strings.Contains(f.names[0], "-t1-") || !strings.Contains(f.names[1], "-t1a2-") {
		t.Errorf("instances %q: want t1 then t1a2", f.names)
	}
}

func TestSinkErrorStopsTheCampaign(t *testing.T) {
	s := &sink{err: errors.New("disk full")}
	e := experiment(t, oneFakeCell)
	f := &fake{stdout: `{"event":"result","result":{"status":"ok"}}` + "\n"}
	_, err := Run(context.Background(), options(e, map[string]platform.Platform{"fake": f}, s))
	if err == nil || !strings.Contains(err.Error(), "disk full") || len(s.trials) != 1 {
		t.Fatalf("got %v after %d trials", err, len(s.trials))
	}
}

// Ctrl-C in the middle of a trial: the cut-short trial is not a result.
func TestInterruptedTrialIsNotRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	e := experiment(t, `name: i
workloads: [{type: cpu.primes, params: {duration: 1m}}]
`)
	s := &sink{}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	sum, err := Run(ctx, options(e, map[string]platform.Platform{"native": native.New(testutil.Binary(t))}, s))
	if !errors.Is(err, ErrInterrupted) || !sum.Interrupted {
		t.Fatalf("got %v %+v", err, sum)
	}
	if len(s.trials) != 0 {
		t.Errorf("an interrupted trial was recorded: %+v", s.trials)
	}
	// Promptness, not a timing: far below the trial's minute.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("stopping took %s", d)
	}
}

func TestTimeoutIsATimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes")
	}
	e := experiment(t, `name: t
repetitions: 1
timeout: 300ms
workloads: [{type: cpu.primes, params: {duration: 1m}}]
`)
	s := &sink{}
	if _, err := Run(context.Background(), options(e, map[string]platform.Platform{"native": native.New(testutil.Binary(t))}, s)); err != nil {
		t.Fatal(err)
	}
	if len(s.trials) != 1 || s.trials[0].Status != result.Timeout || !strings.Contains(s.trials[0].Error, "timed out after 300ms") {
		t.Fatalf("%+v", s.trials)
	}
}

// Issue 10, item 13: a trial the platform failed once (the engine was
// restarting) is tried again and ends ok, the failed attempt kept in its
// record; with retries: 0 it stays failed.
func TestPlatformFailureIsRetried(t *testing.T) {
	retryPause = 0
	ok := `{"event":"result","result":{"status":"ok","observations":[{"metric":"x","value":1,"unit":"u","better":"higher"}]}}` + "\n"
	s := &sink{}
	f := &fake{startErr: errors.New("Cannot connect to the Docker daemon"), failStarts: 1, stdout: ok}
	if _, err := Run(context.Background(), options(experiment(t, oneFakeCell), map[string]platform.Platform{"fake": f}, s)); err != nil {
		t.Fatal(err)
	}
	first := s.trials[0]
	if first.Status != result.OK || first.FailedBy != "" || len(first.Attempts) != 1 ||
		first.Attempts[0].FailedBy != result.FailedByPlatform || !strings.Contains(first.Attempts[0].Error, "Cannot connect") {
		t.Fatalf("first trial: %+v", first)
	}
	if second := s.trials[1]; second.Status != result.OK || len(second.Attempts) != 0 {
		t.Errorf("second trial: %+v", second)
	}

	s = &sink{}
	f = &fake{startErr: errors.New("Cannot connect to the Docker daemon"), failStarts: 1, stdout: ok}
	if _, err := Run(context.Background(), options(experiment(t, "retries: 0\n"+oneFakeCell), map[string]platform.Platform{"fake": f}, s)); err != nil {
		t.Fatal(err)
	}
	if first := s.trials[0]; first.Status != result.Failed || first.FailedBy != result.FailedByPlatform || len(first.Attempts) != 0 {
		t.Errorf("retries 0: %+v", first)
	}
}

// signed signs the events among lines with key, as an agent does.
func signed(lines, key string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(lines, "\n") {
		if ev, ok := result.ParseEvent([]byte(l)); ok {
			b.Write(ev.Line(key))
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}
