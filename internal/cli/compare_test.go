package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// compare exits 1 when a metric regressed beyond the threshold, 0 when
// not, so a CI can gate on it.
func TestCompareExitStatus(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		id     string
		values []float64
	}{{"old", []float64{10, 10.1, 9.9, 10}}, {"new", []float64{9, 9.1, 8.9, 9}}} {
		camp := result.Campaign{ID: c.id, Name: "gate", SpecPath: "gate.yaml", Status: "done", Started: time.Unix(int64(1e9+i), 0),
			Env: map[string]string{result.EnvKernel: "6.1." + c.id, result.EnvHostname: c.id}}
		if err := db.CreateCampaign(ctx, camp); err != nil {
			t.Fatal(err)
		}
		if err := db.AddCells(ctx, c.id, []result.Cell{{ID: 1, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": "docker"}, Params: map[string]string{}}}); err != nil {
			t.Fatal(err)
		}
		for s, v := range c.values {
			tr := result.Trial{CampaignID: c.id, CellID: 1, Seq: s + 1, Repetition: s + 1, Status: result.OK, Started: camp.Started, Ended: camp.Started,
				Observations: []result.Observation{{Metric: "throughput", Value: v, Unit: "Gbit/s", Better: result.Higher}}}
			if _, err := db.RecordTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	for _, c := range []struct {
		threshold string
		code      int
		want      string
	}{{"1%", ExitError, "regressed"}, {"15%", ExitOK, "within threshold"}} {
		var out, errOut bytes.Buffer
		code := Main(ctx, []string{"compare", "old", "new", "--db", path, "--threshold", c.threshold}, &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.want) {
			t.Errorf("threshold %s: exit %d, want %d and %q:\n%s%s", c.threshold, code, c.code, c.want, out.String(), errOut.String())
		}
	}
}

// --strict-env refuses campaigns whose machine or engine differ (exit 2,
// the keys in the message); without it the differences are listed above
// the table.
func TestCompareStrictEnv(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"old", "new"} {
		camp := result.Campaign{ID: id, Name: "gate", SpecPath: "gate.yaml", Status: "done", Started: time.Unix(int64(1e9+i), 0),
			Env: map[string]string{result.EnvKernel: "6.1." + id, result.EnvDocker: "20.10"}}
		if err := db.CreateCampaign(ctx, camp); err != nil {
			t.Fatal(err)
		}
		if err := db.AddCells(ctx, id, []result.Cell{{ID: 1, Workload: "tcp", WorkloadType: "net.tcp_stream", Factors: map[string]string{"platform": "docker"}, Params: map[string]string{}}}); err != nil {
			t.Fatal(err)
		}
		for s, v := range []float64{10, 10.1, 9.9} {
			tr := result.Trial{CampaignID: id, CellID: 1, Seq: s + 1, Repetition: s + 1, Status: result.OK, Started: camp.Started, Ended: camp.Started,
				Observations: []result.Observation{{Metric: "throughput", Value: v, Unit: "Gbit/s", Better: result.Higher}}}
			if _, err := db.RecordTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"compare", "old", "new", "--db", path}, &out, &errOut); code != ExitOK ||
		!strings.Contains(out.String(), `kernel: A "6.1.old", B "6.1.new"`) || strings.Contains(out.String(), "docker.version") {
		t.Errorf("without --strict-env: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Main(ctx, []string{"compare", "old", "new", "--db", path, "--strict-env"}, &out, &errOut); code != ExitInvalidInput ||
		!strings.Contains(errOut.String(), `kernel "6.1.old" in A, "6.1.new" in B`) {
		t.Errorf("--strict-env: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
