package workloads

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/workload"
)

func TestParseStream(t *testing.T) {
	good := `{"array_size":2000000,"threads":1,"ntimes":5,"bytes_per_array":16000000,"copy_gbs":23.6,"scale_gbs":21.6,"add_gbs":25.5,"triad_gbs":24.0,` +
		`"avg_time":{"copy":0.0014,"scale":0.0015,"add":0.0019,"triad":0.0022},"min_time":{"copy":0.0013,"scale":0.0014,"add":0.0018,"triad":0.0019},` +
		`"max_time":{"copy":0.0014,"scale":0.0016,"add":0.0020,"triad":0.0029},"validated":true}` + "\n"
	obs, _, err := parseStream([]byte(good), good, nil, 2000000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := obsMap(obs); m["copy"] != 23.6 || m["scale"] != 21.6 || m["add"] != 25.5 || m["triad"] != 24.0 || m["array_size"] != 2e6 {
		t.Errorf("metrics %v", m)
	}
	unvalidated := strings.Replace(good, `"validated":true`, `"validated":false`, 1)
	stderr := "ctb-stream: validation failed: array b[1000000] = 303750.30375000002, want 303750 (relative error 1e-06 >= 1e-13)"
	for name, c := range map[string]struct {
		out, raw string
		runErr   error
		want     string
	}{
		"validated false":      {unvalidated, unvalidated + stderr, errors.New("exit status 3"), "validation failed: array b[1000000] = 303750.30375000002"},
		"validated false, ok":  {unvalidated, unvalidated, nil, "validation failed: the arrays do not hold"},
		"no validated":         {strings.Replace(good, `,"validated":true`, ``, 1), "", nil, "validation failed"},
		"not json":             {"Killed\n", "", nil, "not the JSON expected"},
		"not json, exit":       {"", "", errors.New("exit status 1: cannot allocate 8000000000 bytes for array a"), "cannot allocate"},
		"zero rate":            {strings.Replace(good, `"add_gbs":25.5`, `"add_gbs":0`, 1), "", nil, "no positive finite add rate"},
		"missing rate":         {strings.Replace(good, `"triad_gbs":24.0,`, ``, 1), "", nil, "no positive finite triad rate"},
		"other configuration":  {strings.Replace(good, `"threads":1`, `"threads":2`, 1), "", nil, "different configuration"},
		"good but exit status": {good, "", errors.New("signal: killed"), "killed"},
	} {
		if c.raw == "" {
			c.raw = c.out
		}
		_, raw, err := parseStream([]byte(c.out), c.raw, c.runErr, 2000000, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
		if raw != c.raw {
			t.Errorf("%s: raw output not kept", name)
		}
	}
}

// fakeCaches writes a sysfs-like cache directory: level → size strings.
func fakeCaches(t *testing.T, caches [][2]string) string {
	dir := t.TempDir()
	for i, c := range caches {
		d := filepath.Join(dir, "index"+string(rune('0'+i)))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "level"), []byte(c[0]+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "size"), []byte(c[1]+"\n"), 0o644)
	}
	return dir
}

func TestStreamAutoSize(t *testing.T) {
	dir := fakeCaches(t, [][2]string{{"1", "48K"}, {"1", "32K"}, {"2", "2048K"}, {"3", "266240K"}})
	llc, err := largestCache(dir)
	if err != nil || llc != 266240<<10 {
		t.Fatalf("largestCache = %d, %v", llc, err)
	}
	if got := streamAutoSize(llc); got != 4*266240*1024/8 {
		t.Errorf("auto size for 260MiB = %d", got)
	}
	if got := streamAutoSize(8 << 20); got != streamMinAuto {
		t.Errorf("auto size for 8MiB = %d, want the 10M floor", got)
	}
	if _, err := largestCache(t.TempDir()); err == nil {
		t.Error("an empty cache directory gave a size")
	}
	for in, want := range map[string]int64{"48K": 48 << 10, "32M": 32 << 20, "1G": 1 << 30, "512": 512} {
		if got, err := parseCacheSize(in); err != nil || got != want {
			t.Errorf("parseCacheSize(%q) = %d, %v", in, got, err)
		}
	}
	// The real machine: whatever it reports must give a usable size.
	if llc, err := largestCache(cacheDir); err == nil && streamAutoSize(llc) < streamMinAuto {
		t.Errorf("auto size %d below the floor", streamAutoSize(llc))
	}
}

func TestStreamSmokeRuns(t *testing.T) {
	useKernels(t, "ctb-stream")
	s, _ := workload.Lookup("mem.stream")
	for _, threads := range []string{"1", "2"} {
		user := map[string]string{"threads": threads}
		for k, v := range s.Smoke {
			user[k] = v
		}
		obs, raw, err := runStream(context.Background(), values(t, "mem.stream", user), workload.Env{})
		if err != nil {
			t.Fatalf("threads %s: %v\n%s", threads, err, raw)
		}
		m := obsMap(obs)
		for _, k := range []string{"copy", "scale", "add", "triad"} {
			if !(m[k] > 0) {
				t.Errorf("threads %s: %s = %v", threads, k, m[k])
			}
		}
		if m["triad"] < 0.1 || m["triad"] > 1000 {
			t.Errorf("threads %s: triad %.3g GB/s outside 0.1–1000", threads, m["triad"])
		}
		if m["array_size"] != 2e6 {
			t.Errorf("array_size %v", m["array_size"])
		}
	}
}

// Auto sizing end to end, on a pretend small cache so the run stays short.
func TestStreamAutoRuns(t *testing.T) {
	useKernels(t, "ctb-stream")
	old := cacheDir
	cacheDir = fakeCaches(t, [][2]string{{"2", "1024K"}})
	t.Cleanup(func() { cacheDir = old })
	var logged string
	obs, raw, err := runStream(context.Background(), values(t, "mem.stream", map[string]string{"ntimes": "2"}),
		workload.Env{Log: func(f string, a ...any) { logged = f }})
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if m := obsMap(obs); m["array_size"] != streamMinAuto || !(m["triad"] > 0) {
		t.Errorf("metrics %v", m)
	}
	if !strings.Contains(logged, "auto") {
		t.Errorf("auto size not logged: %q", logged)
	}
}

// A wrong element must fail the trial: proves the validation works.
func TestStreamDetectsWrongElement(t *testing.T) {
	useKernels(t, "ctb-stream")
	corrupting(t)
	p := values(t, "mem.stream", map[string]string{"array_size": "100000", "ntimes": "3"})
	obs, raw, err := runStream(context.Background(), p, workload.Env{})
	if err == nil || !strings.Contains(err.Error(), "validation failed: array b[50000]") {
		t.Fatalf("want a failed validation naming the element, got %v (%v)", err, obs)
	}
	if !strings.Contains(raw, `"validated":false`) {
		t.Errorf("raw output not kept: %q", raw)
	}
}

func TestStreamMemoryGuard(t *testing.T) {
	posingAsMachine(t, 2<<30)
	p := values(t, "mem.stream", map[string]string{"array_size": "100000000"})
	_, _, err := runStream(context.Background(), p, workload.Env{})
	if err == nil || !strings.Contains(err.Error(), "mem.stream array_size=100000000 (three arrays) needs 2.40 GB") {
		t.Fatalf("want the memory guard's error, got %v", err)
	}
}
