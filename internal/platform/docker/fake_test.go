package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/engine/enginetest"
	"github.com/ctrbench/ctrbench/internal/platform"
)

func preparedPlatform(t *testing.T, f *enginetest.Fake) *Platform {
	t.Helper()
	p, err := New(WithEngine(engine.WithClient(f)), WithBinary(staticStandin(t)))
	if err != nil {
		t.Fatal(err)
	}
	f.ImageFound = true
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: "fake"}); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartFailureRemovesContainer(t *testing.T) {
	f := &enginetest.Fake{StartErr: errors.New("OCI runtime create failed")}
	p := preparedPlatform(t, f)
	_, err := p.Start(context.Background(), platform.InstanceSpec{Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "OCI runtime create failed") {
		t.Errorf("Start = %v", err)
	}
	if len(f.Removed) != 1 || f.Removed[0] != "c0ffee" {
		t.Errorf("removed %v, want the created container", f.Removed)
	}
}

func TestBuildErrorReported(t *testing.T) {
	f := &enginetest.Fake{BuildBody: `{"stream":"Step 1/4 : FROM scratch\n"}` + "\n" + `{"errorDetail":{"message":"no space left on device"},"error":"no space left on device"}` + "\n"}
	p, err := New(WithEngine(engine.WithClient(f)), WithBinary(staticStandin(t)))
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	err = p.Prepare(context.Background(), platform.Setup{CampaignID: "fake", Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Prepare = %v", err)
	}
	// A failed build's error carries the builder's log, so the user sees
	// which step failed; a successful build stays one line of progress.
	if err == nil || !strings.Contains(err.Error(), "Step 1/4") {
		t.Errorf("build log not in the error: %v", err)
	}
	if strings.Contains(progress.String(), "Step 1/4") {
		t.Errorf("builder steps written to Progress: %q", progress.String())
	}
}

func TestRemoveTolerance(t *testing.T) {
	for name, rerr := range map[string]error{
		"not found":   fmt.Errorf("no such container: %w", cerrdefs.ErrNotFound),
		"in progress": fmt.Errorf("removal of container c0ffee is already in progress: %w", cerrdefs.ErrConflict),
	} {
		t.Run(name, func(t *testing.T) {
			f := &enginetest.Fake{RemoveErr: rerr}
			inst := &instance{eng: f.Engine(t), id: "c0ffee", name: "x"}
			if err := inst.Remove(context.Background()); err != nil {
				t.Errorf("Remove = %v", err)
			}
			if err := inst.Remove(context.Background()); err != nil || len(f.Removed) != 1 {
				t.Errorf("second Remove = %v after %d calls", err, len(f.Removed))
			}
		})
	}
	f := &enginetest.Fake{RemoveErr: errors.New("daemon busy")}
	inst := &instance{eng: f.Engine(t), id: "c0ffee", name: "x"}
	if err := inst.Remove(context.Background()); err == nil {
		t.Error("Remove hid a real failure")
	}
	f.RemoveErr = nil
	if err := inst.Remove(context.Background()); err != nil || len(f.Removed) != 2 {
		t.Errorf("retried Remove = %v after %d calls", err, len(f.Removed))
	}
}

func TestBufferAndTail(t *testing.T) {
	b := newBuffer()
	b.Write([]byte("ab"))
	b.Write([]byte("c"))
	done := make(chan string)
	go func() { all, _ := io.ReadAll(b); done <- string(all) }()
	b.Write([]byte("d"))
	b.CloseWithError(io.EOF)
	if got := <-done; got != "abcd" {
		t.Errorf("buffer read %q", got)
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Error("write after close succeeded")
	}
}

func TestResources(t *testing.T) {
	r, err := resources(platform.Limits{CPUs: 1.5, Cpuset: "0-1", MemoryBytes: 1 << 30})
	if err != nil || r.NanoCPUs != 1.5e9 || r.CpusetCpus != "0-1" || r.Memory != 1<<30 || r.MemorySwap != 1<<30 {
		t.Errorf("resources = %+v, %v", r, err)
	}
	if r, _ := resources(platform.Limits{}); r.NanoCPUs != 0 || r.Memory != 0 || r.MemorySwap != 0 {
		t.Errorf("zero limits gave %+v", r)
	}
	if _, err := resources(platform.Limits{CPUs: -1}); err == nil {
		t.Error("negative CPUs accepted")
	}
}
