package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/vm"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

// exampleImages builds the example images (scripts/images.sh: nginx,
// redis, busybox httpd FROM scratch, offline) and returns their directory;
// a second build is skipped by the script, and it leaves nothing in the
// engine.
func exampleImages(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testutil.ModuleRoot(), "images")
	cmd := exec.Command("bash", filepath.Join(testutil.ModuleRoot(), "scripts", "images.sh"), "--out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/images.sh: %v\n%s", err, out)
	}
	return dir
}

// TestOwnServiceFromImages measures real servers nobody here wrote from
// their own images — nginx driven by http.get and by wrk, redis by
// redis-benchmark from the redis image — as a host process running the
// same binary (the image unpacked, chrooted), in Docker and LXC on a
// bridge and in podman on the host network, and checks each trial's
// numbers against what the tools and the files say. (A user's image on
// the other network of each runs in TestOwnImageFromEngine and
// TestServiceAcrossPlacements.)
func TestOwnServiceFromImages(t *testing.T) {
	requireDocker(t)
	img := exampleImages(t)
	exp := strings.ReplaceAll(`name: e2e-own-service
seed: 3
repetitions: 1
timeout: 90s
factors:
  platform: [native, docker, podman, lxc]
  network: [host, bridge]
exclude: [{platform: native, network: bridge}, {platform: podman, network: bridge}, {platform: docker, network: host}, {platform: lxc, network: host}]
workloads:
  - name: web
    type: service
    params:
      image_archive: IMAGES/nginx.tar
      port: 8080
      ready: {http: /index.html}
      client: {type: http.get, params: {path: /4k.bin, concurrency: 4, duration: 500ms}}
  - name: web-wrk
    type: service
    params:
      image_archive: IMAGES/nginx.tar
      port: 8080
      client:
        type: exec
        params:
          command: [wrk, -t1, -c4, -d1s, "http://{server.host}:{server.port}/4k.bin"]
          format: regex
          metrics:
            rps: {pattern: 'Requests/sec:\s+(?P<value>[0-9.]+)', unit: req/s, better: higher}
            requests: {pattern: '(?P<value>[0-9]+) requests in', unit: requests, better: higher}
`+redisService(20000, 4, "set", "get"), "IMAGES", img)
	db, id := runStored(t, exp)
	cells := cellFactors(t, db, id)
	seen := map[string]int{}
	placement := func(tr result.Trial) string { return cells[tr.CellID]["platform"] + "/" + cells[tr.CellID]["network"] }
	for _, tr := range okOf(t, storedTrials(t, db, id), placement) {
		where := placement(tr)
		m := trialMeasures(tr)
		// Every trial records the image its server ran from, by ID, and
		// the command that ran.
		if id := tr.Seen["server.platform."+platform.SeenImageID]; !strings.HasPrefix(id, "sha256:") || tr.Seen["server.command"] == "" {
			t.Errorf("trial %d (%s): server image %q, command %q not recorded", tr.Seq, where, id, tr.Seen["server.command"])
		}
		// A user's client keeps the output its numbers were read from:
		// every number is the one the tool printed in this trial.
		for name, want := range printed(tr.Raw) {
			if m[name] != want {
				t.Errorf("trial %d (%s): %s = %v, the tool printed %v", tr.Seq, where, name, m[name], want)
			}
		}
		switch {
		case m["set_rps"] > 0:
			if p := printed(tr.Raw); len(p) != 2 {
				t.Errorf("trial %d (%s): the kept output shows %v, want SET and GET\n%s", tr.Seq, where, p, tr.Raw)
			}
			if least := 20000/m["set_rps"] + 20000/m["get_rps"]; m["wall_time"] < 0.9*least {
				t.Errorf("trial %d (%s): wall time %.3f s, the printed rates need %.3f s", tr.Seq, where, m["wall_time"], least)
			}
		case m["rps"] > 0:
			if p := printed(tr.Raw); len(p) != 2 {
				t.Errorf("trial %d (%s): the kept output shows %v, want wrk's rate and requests\n%s", tr.Seq, where, p, tr.Raw)
			}
			// wrk's rate is its requests over the time it ran, which it
			// prints (1 s asked; longer when the machine is busy).
			secs := wrkSeconds(tr.Raw)
			if r := m["requests"] / m["rps"]; secs < 1 || math.Abs(r-secs) > 0.01+0.01*secs {
				t.Errorf("trial %d (%s): wrk says %v requests at %v/s (%.3f s) in %.2f s", tr.Seq, where, m["requests"], m["rps"], r, secs)
			}
		default:
			// Every correct response was the 4 KiB file, whole.
			if per := m["transfer_rate"] * 1e6 / m["requests_per_sec"]; m["errors"] != 0 || per < 4095.5 || per > 4096.5 {
				t.Errorf("trial %d (%s): %.1f bytes per response (want 4096), %v errors", tr.Seq, where, per, m["errors"])
			}
		}
		seen[where]++
	}
	for _, where := range []string{"native/host", "docker/bridge", "podman/host", "lxc/bridge"} {
		if seen[where] != 3 { // 3 services, 1 repetition (every trial is checked against its tool's text)
			t.Errorf("%s: %d ok trials, want 3", where, seen[where])
		}
	}
}

// redisService is the workload kv of the own-service experiments, in
// their YAML: redis from the example image, driven by redis-benchmark from
// the same image making requests requests over clients connections for
// each of tests (redis-benchmark's names, lower case), each test's rate
// read from its CSV row as the metric <test>_rps. IMAGES stands for the
// images' directory, as in the experiments around it.
func redisService(requests, clients int, tests ...string) string {
	var metrics strings.Builder
	for _, test := range tests {
		fmt.Fprintf(&metrics, "            %s_rps: {select: '%s,rps', unit: req/s, better: higher}\n", test, strings.ToUpper(test))
	}
	return fmt.Sprintf(`  - name: kv
    type: service
    params:
      image_archive: IMAGES/redis.tar
      port: 6379
      client:
        type: exec
        params:
          image_archive: IMAGES/redis.tar
          command: [redis-benchmark, -h, "{server.host}", -p, "{server.port}", -n, "%d", -c, "%d", -t, "%s", -q, --csv]
          format: csv
          metrics:
`, requests, clients, strings.Join(tests, ",")) + metrics.String()
}

// printed reads, from a trial's kept output, the numbers wrk and
// redis-benchmark printed, by the metric names the experiment gives them:
// wrk's "Requests/sec:" and "N requests in", redis-benchmark's CSV rows.
func printed(raw string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(raw, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "|"))
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			out["rps"], _ = strconv.ParseFloat(f[1], 64)
		case len(f) > 2 && f[1] == "requests" && f[2] == "in":
			out["requests"], _ = strconv.ParseFloat(f[0], 64)
		case strings.HasPrefix(l, `"SET","`), strings.HasPrefix(l, `"GET","`):
			cols := strings.Split(l, ",")
			v, _ := strconv.ParseFloat(strings.Trim(cols[1], `"`), 64)
			out[strings.ToLower(strings.Trim(cols[0], `"`))+"_rps"] = v
		}
	}
	return out
}

// wrkSeconds reads the time wrk ran from its "N requests in 1.00s, …"
// line (0 when there is none).
func wrkSeconds(raw string) float64 {
	for _, l := range strings.Split(raw, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "|"))
		if len(f) < 4 || f[1] != "requests" || f[2] != "in" {
			continue
		}
		d, err := time.ParseDuration(strings.TrimSuffix(f[3], ","))
		if err == nil {
			return d.Seconds()
		}
	}
	return 0
}

// TestOwnServiceNestedAndSwarm runs users' images where the image must
// travel further: into each nested parent's engine (loaded there, as the
// agent image is) and into each node of an emulated swarm. A service from
// an image is driven by a client from an image (redis-benchmark from the
// redis image), and an exec from another reads its number; each trial
// records the image it ran from by ID (a service driven by a built-in
// client, nginx with http.get, is TestOwnServiceFromImages's: the image's
// journey is the same). One network each (the image's
// journey does not depend on it; the swarm's host network runs in
// TestPhysicsInvariant, a nested parent's in
// TestNestedHostParentLeavesTheMachineAlone).
func TestOwnServiceNestedAndSwarm(t *testing.T) {
	requireDocker(t)
	img := exampleImages(t)
	exp := strings.ReplaceAll(`name: e2e-own-nested-swarm
seed: 5
repetitions: 1
timeout: 3m
factors:
  placement:
    nested: {platform: nested, network: bridge}
    swarm: {platform: swarm, network: overlay}
workloads:
`+redisService(5000, 4, "set")+`  - name: job
    type: exec
    params:
      image_archive: IMAGES/httpd.tar
      command: [/bin/busybox, sh, -c, "echo value=$((6*7))"]
      format: regex
      metrics:
        v: {pattern: 'value=(?P<value>[0-9]+)', unit: count, better: higher}
`, "IMAGES", img)
	db, id := runStored(t, exp)
	cells := cellFactors(t, db, id)
	seen := map[string]int{}
	placement := func(tr result.Trial) string { return cells[tr.CellID]["platform"] + "/" + cells[tr.CellID]["network"] }
	for _, tr := range okOf(t, storedTrials(t, db, id), placement) {
		where := placement(tr)
		m := trialMeasures(tr)
		key := "server.platform." + platform.SeenImageID
		if m["v"] > 0 { // the exec has no server
			key = "platform." + platform.SeenImageID
		}
		if id := tr.Seen[key]; !strings.HasPrefix(id, "sha256:") {
			t.Errorf("trial %d (%s): image ID %q not recorded (%s)", tr.Seq, where, id, key)
		}
		switch {
		case m["v"] > 0:
			if m["v"] != 42 {
				t.Errorf("trial %d (%s): the command printed value=42, read %v", tr.Seq, where, m["v"])
			}
		case m["set_rps"] > 0:
			if m["wall_time"] < 0.9*5000/m["set_rps"] {
				t.Errorf("trial %d (%s): wall time %.3f s, the printed rate needs %.3f s", tr.Seq, where, m["wall_time"], 5000/m["set_rps"])
			}
		default:
			t.Errorf("trial %d (%s): neither the exec's number nor the client's rate: %v", tr.Seq, where, m)
		}
		seen[where]++
	}
	for _, where := range []string{"nested/bridge", "swarm/overlay"} {
		if seen[where] != 2 {
			t.Errorf("%s: %d ok trials, want 2", where, seen[where])
		}
	}
}

// An image without the command, or an archive that is no image, is
// refused before anything starts: exit 2, file:line, no campaign.
func TestOwnServiceBadImages(t *testing.T) {
	img := exampleImages(t)
	bad := filepath.Join(t.TempDir(), "bad.tar")
	if err := os.WriteFile(bad, []byte("not a tar at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ params, want, line string }{
		"missing command": {"image_archive: " + img + "/httpd.tar\n      command: [nginx, -g, daemon off;]", "has no program nginx", ":6:"},
		"corrupt archive": {"image_archive: " + bad + "\n      command: [x]", "not a tar archive", ":5:"},
		"missing archive": {"image_archive: nowhere.tar\n      command: [x]", "nowhere.tar: no such file", ":5:"},
	} {
		exp := writeExperiment(t, "name: bad\nworkloads:\n  - type: exec\n    params:\n      "+c.params+"\n")
		db := filepath.Join(t.TempDir(), "r.db")
		r := ctrbench(t, time.Minute, "run", exp, "--db", db)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "exp.yaml"+c.line) {
			t.Errorf("%s: exit %d, want 2 and %q at exp.yaml%s\n%s", name, r.code, c.want, c.line, r.stderr)
		}
		if _, err := os.Stat(db); err == nil {
			t.Errorf("%s: a results file was created", name)
		}
	}
}

// Users' services as neighbours (S0's matrix as "my API beside my
// database"): nginx measured beside redis driven by redis-benchmark, in one
// container (the generator's instance runs from redis's image) and in
// containers of their own; a neighbour that needs another image than the
// target's instance is refused before anything starts, saying why.
func TestOwnServiceNeighbours(t *testing.T) {
	requireDocker(t)
	img := exampleImages(t)
	exp := strings.ReplaceAll(`name: e2e-own-neighbours
seed: 9
repetitions: 1
timeout: 2m
factors:
  platform: [docker]
  network: [bridge]
  neighbour: [kv]
  packaging: [same-container, separate-containers]
exclude: [{workload: kv}]
workloads:
  - name: web
    type: service
    params:
      image_archive: IMAGES/nginx.tar
      port: 8080
      ready: {http: /index.html}
      client: {type: http.get, params: {path: /4k.bin, concurrency: 4, duration: 1s}}
`+redisService(5000, 2, "set"), "IMAGES", img)
	db, id := runStored(t, exp)
	cells := cellFactors(t, db, id)
	seen := map[string]bool{}
	packing := func(tr result.Trial) string {
		return cells[tr.CellID]["neighbour"] + "/" + cells[tr.CellID]["packaging"]
	}
	for _, tr := range okOf(t, storedTrials(t, db, id), packing) {
		f, where := cells[tr.CellID], packing(tr)
		if f["neighbour"] == "kv" {
			// The neighbour ran, over the whole measured window.
			it, _ := observed(tr, "neighbour.iterations")
			ov, _ := observed(tr, "neighbour.overlap_pct")
			if it < 1 || ov < 90 {
				t.Errorf("trial %d (%s): neighbour %v iterations, overlap %v%%", tr.Seq, where, it, ov)
			}
		}
		seen[where] = true
	}
	for _, where := range []string{"none/", "kv/same-container", "kv/separate-containers"} {
		if !seen[where] {
			t.Errorf("no ok trial of %s", where)
		}
	}
	// advise packs the user's own kinds of service from what was measured.
	if r := ctrbench(t, time.Minute, "advise", "--db", db, "--campaign", id, "--services", "front=web,back=web"); r.code != 0 ||
		!strings.Contains(r.stdout, "kinds: web (requests_per_sec)") || !strings.Contains(r.stdout, "front (web") || !strings.Contains(r.stdout, "back (web") {
		t.Errorf("advise --services: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A neighbour from the machine's programs cannot share the instance of
	// a client that runs from redis's image.
	bad := strings.Replace(strings.Replace(exp, "neighbour: [kv]", "neighbour: [job]", 1), "exclude: [{workload: kv}]", "exclude: [{workload: web}, {workload: job}]", 1) +
		"  - {name: job, type: exec, params: {command: [sh, -c, \"echo 1\"]}}\n"
	r := ctrbench(t, time.Minute, "run", writeExperiment(t, bad), "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "packaging same-container runs the neighbours in the instance of the target's client") ||
		!strings.Contains(r.stderr, "redis.tar and the neighbour job from ctrbench's agent image") {
		t.Errorf("same-container across images: exit %d\n%s", r.code, r.stderr)
	}
}

// An image named in the machine's engine (image:, not an archive) runs on
// every platform, those that unpack images too (host processes, LXC): the
// engine saves it for them, and the saved copy goes when they are done.
func TestOwnImageFromEngine(t *testing.T) {
	requireDocker(t)
	img := exampleImages(t)
	const tag, example = "ctrbench-e2e/httpd:from-engine", "ctrbench-example/httpd:1"
	had := exec.Command("docker", "image", "inspect", example).Run() == nil
	if out, err := exec.Command("docker", "load", "-i", filepath.Join(img, "httpd.tar")).CombinedOutput(); err != nil {
		t.Fatalf("docker load: %v\n%s", err, out)
	}
	if out, err := exec.Command("docker", "tag", example, tag).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v\n%s", err, out)
	}
	if !had { // the example's tag is someone's when it was there before
		exec.Command("docker", "rmi", example).Run()
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", tag).Run() })
	db, id := runStored(t, `name: e2e-image-ref
seed: 1
repetitions: 1
timeout: 1m
factors:
  platform: [native, docker, lxc]
workloads:
  - name: job
    type: exec
    params:
      image: `+tag+`
      command: [/bin/busybox, sh, -c, "echo value=$((6*7))"]
      format: regex
      metrics:
        v: {pattern: 'value=(?P<value>[0-9]+)', unit: count, better: higher}
`)
	cells := cellFactors(t, db, id)
	seen := map[string]bool{}
	platformOf := func(tr result.Trial) string { return cells[tr.CellID]["platform"] }
	for _, tr := range okOf(t, storedTrials(t, db, id), platformOf) {
		pl := platformOf(tr)
		if trialMeasures(tr)["v"] != 42 || !strings.HasPrefix(tr.Seen["platform."+platform.SeenImageID], "sha256:") {
			t.Errorf("%s: %v, image %q", pl, trialMeasures(tr), tr.Seen["platform."+platform.SeenImageID])
		}
		seen[pl] = true
	}
	if len(seen) != 3 {
		t.Errorf("ran on %v, want native, docker and lxc", seen)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "ctrbench-save-*")); len(left) > 0 {
		t.Errorf("saved copies left behind: %v", left)
	}
}

// A user's image as a virtual machine: its files, flattened, are the
// initramfs with the agent as init and the image's environment, so nginx
// serves from its own image in the machine and busybox's sh computes there.
func TestOwnImageOnVM(t *testing.T) {
	if err := vm.Available(); err != nil {
		t.Skip(err)
	}
	img := exampleImages(t)
	db, id := runStored(t, strings.ReplaceAll(`name: e2e-own-vm
seed: 2
repetitions: 1
timeout: 3m
factors:
  platform: [vm]
  network: [bridge]
workloads:
  - name: web
    type: service
    params:
      image_archive: IMAGES/nginx.tar
      port: 8080
      ready: {http: /index.html, timeout: 60s}
      client: {type: http.get, params: {path: /4k.bin, concurrency: 2, duration: 1s}}
  - name: job
    type: exec
    params:
      image_archive: IMAGES/httpd.tar
      command: [/bin/busybox, sh, -c, "echo value=$((6*7))"]
      format: regex
      metrics:
        v: {pattern: 'value=(?P<value>[0-9]+)', unit: count, better: higher}
`, "IMAGES", img))
	ok := 0
	for _, tr := range okOf(t, storedTrials(t, db, id), nil) {
		m := trialMeasures(tr)
		key := "server.platform." + platform.SeenImageID
		if _, isJob := m["v"]; isJob {
			key = "platform." + platform.SeenImageID
		}
		switch {
		case !strings.HasPrefix(tr.Seen[key], "sha256:"):
			t.Errorf("trial %d: image ID %q not recorded (%s)", tr.Seq, tr.Seen[key], key)
		case m["v"] != 42 && m["requests_per_sec"] <= 0:
			t.Errorf("trial %d: %v", tr.Seq, m)
		default:
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("%d ok trials, want 2", ok)
	}
}

// issueExample is the example of "your own service" as the issue that asked
// for it wrote it, verbatim (a file without name: is named after the file).
const issueExample = `workloads:
  - name: web                       # a user's server, driven by ctrbench's HTTP generator
    type: service
    params:
      image: local/httpd:1          # an image in the machine's engine, or image_archive: file.tar
      command: [/bin/busybox, httpd, -f, -p, "8080", -h, /www]   # optional: the image's entrypoint otherwise
      port: 8080
      ready: {http: /index.html, timeout: 20s}                    # or {tcp: true}
      client: {type: http.get, params: {concurrency: 8, duration: 3s, path: /index.html}}
  - name: kv                        # a user's server driven by the user's own client
    type: service
    params:
      image_archive: images/redis.tar
      command: [redis-server, --port, "6379", --save, ""]
      port: 6379
      ready: {tcp: true}
      client:
        type: exec
        params:
          command: [redis-benchmark, -h, "{server.host}", -p, "{server.port}", -n, "200000", -q, --csv]
          format: csv               # json | jsonl | csv | benchfmt | regex
          metrics:
            set_rps: {select: 'SET,*', unit: req/s, better: higher}
            get_rps: {select: 'GET,*', unit: req/s, better: higher}
  - name: job                       # a user's command with its own numbers
    type: exec
    params:
      image: local/myjob:1
      command: [/app/bench, --json]
      format: json
      metrics:
        ops: {path: result.ops_per_sec, unit: ops/s, better: higher}
        p99: {path: result.latency.p99_ms, unit: ms, better: lower}
`

// The example runs as written once its images exist: scripts/images.sh
// --keep puts local/httpd:1 and local/myjob:1 into the engine (removed
// again here unless they were there before), and images/redis.tar is
// beside the file. The whole file validates; the run leaves kv out (--set
// exclude): its redis-benchmark runs every test it has, 200000 requests
// each, about 40 s a trial here — redis driven by redis-benchmark from its
// image is TestOwnServiceFromImages' — and makes one repetition.
func TestIssueExampleAsWritten(t *testing.T) {
	requireDocker(t)
	img := exampleImages(t)
	tags := []string{"local/httpd:1", "local/myjob:1", "ctrbench-example/httpd:1", "ctrbench-example/nginx:1", "ctrbench-example/redis:1", "ctrbench-example/myjob:1"}
	had := map[string]bool{}
	for _, tag := range tags {
		had[tag] = exec.Command("docker", "image", "inspect", tag).Run() == nil
	}
	t.Cleanup(func() {
		for _, tag := range tags {
			if !had[tag] {
				exec.Command("docker", "rmi", tag).Run()
			}
		}
	})
	if out, err := exec.Command("bash", filepath.Join(testutil.ModuleRoot(), "scripts", "images.sh"), "--out", img, "--keep").CombinedOutput(); err != nil {
		t.Fatalf("scripts/images.sh --keep: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if err := os.Symlink(img, filepath.Join(dir, "images")); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "example.yaml")
	if err := os.WriteFile(exp, []byte(issueExample), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ctrbench(t, time.Minute, "run", exp, "--dry-run"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "3 cells") {
		t.Fatalf("the example as written: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := filepath.Join(dir, "r.db")
	r := ctrbench(t, 10*time.Minute, "run", exp, "--db", db, "--no-report", "--set", "repetitions=1", "--set", "exclude=[{workload: kv}]")
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	if r.code != 0 {
		t.Fatalf("run exited %d\n%s", r.code, r.stderr)
	}
	trials := storedTrials(t, db, id)
	for _, tr := range okOf(t, trials, nil) {
		m := trialMeasures(tr)
		switch {
		case m["ops"] > 0:
			// myjob hashed for its default second: ops/s is its count.
			if m["p99"] <= 0 || m["wall_time"] < 1 {
				t.Errorf("trial %d (job): %v", tr.Seq, m)
			}
		case m["requests_per_sec"] <= 0 || m["errors"] != 0:
			t.Errorf("trial %d (web): %v", tr.Seq, m)
		}
	}
	if n := len(trials); n != 2 {
		t.Errorf("%d trials, want 2 (web and job)", n)
	}
}
