// Package cgroup reads and creates Linux control groups, v1 and v2. The
// native platform puts an agent process under limits with it; the agent
// reads back the limits it really runs under, so a report never claims a
// limit the kernel did not apply.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Root is where cgroup hierarchies are mounted.
var Root = "/sys/fs/cgroup"

// Base is the group, in every hierarchy, below which ctrbench makes all of
// its own: Base/<campaign>/… (`ctrbench clean` removes the tree).
const Base = "ctrbench"

// CampaignTree is the group of one campaign's cgroups.
func CampaignTree(campaign string) string { return Base + "/" + campaign }

// V2 reports whether Root is a unified (v2-only) hierarchy.
func V2() bool {
	_, err := os.Stat(filepath.Join(Root, "cgroup.controllers"))
	return err == nil
}

// selfPaths maps controller name ("cpu", "memory", ...; "" for v2) to the
// calling process's cgroup path, from /proc/self/cgroup.
func selfPaths() map[string]string { return pathsOf("/proc/self/cgroup") }

// pathsOf reads a /proc/<pid>/cgroup file.
func pathsOf(file string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// readFirst returns the trimmed content of the first readable file.
func readFirst(paths ...string) (string, bool) {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b)), true
		}
	}
	return "", false
}

// candidates lists where a controller file of the calling process may be:
// at its cgroup path (host view) and at the mount root (a container's
// namespaced view, where the root is the container's own group).
func candidates(controller, file string) []string {
	return candidatesIn(selfPaths(), true, controller, file)
}

// candidatesIn lists where a controller file of a process with cgroup
// paths is: at its path (the host's view) and, with atRoot, at the mount
// root (a container's own view of itself).
func candidatesIn(paths map[string]string, atRoot bool, controller, file string) []string {
	var out []string
	if V2() {
		if p, ok := paths[""]; ok {
			out = append(out, filepath.Join(Root, p, file))
		}
		if atRoot {
			out = append(out, filepath.Join(Root, file))
		}
		return out
	}
	dir := controller
	if controller == "cpu" {
		dir = "cpu,cpuacct"
	}
	for _, d := range []string{controller, dir} {
		if p, ok := paths[controller]; ok {
			out = append(out, filepath.Join(Root, d, p, file))
		}
		if atRoot {
			out = append(out, filepath.Join(Root, d, file))
		}
	}
	return out
}

// Limits are the limits the calling process runs under.
type Limits struct {
	CPUs        float64 // 0 = unlimited
	Cpuset      string
	MemoryBytes int64 // 0 = unlimited
	Version     int
}

// Self reads the limits of the calling process's own cgroups.
func Self() Limits { return limitsOf(candidates) }

// Of reads, from the host, the limits of process pid's cgroups (a nested
// parent container's, which bound its children).
func Of(pid int) Limits {
	paths := pathsOf(fmt.Sprintf("/proc/%d/cgroup", pid))
	return limitsOf(func(controller, file string) []string { return candidatesIn(paths, false, controller, file) })
}

func limitsOf(candidates func(controller, file string) []string) Limits {
	l := Limits{Version: 1}
	if V2() {
		l.Version = 2
		if s, ok := readFirst(candidates("", "cpu.max")...); ok {
			f := strings.Fields(s)
			if len(f) == 2 && f[0] != "max" {
				q, _ := strconv.ParseFloat(f[0], 64)
				per, _ := strconv.ParseFloat(f[1], 64)
				if per > 0 {
					l.CPUs = q / per
				}
			}
		}
		l.Cpuset, _ = readFirst(candidates("", "cpuset.cpus.effective")...)
		if s, ok := readFirst(candidates("", "memory.max")...); ok && s != "max" {
			l.MemoryBytes, _ = strconv.ParseInt(s, 10, 64)
		}
		return l
	}
	q, okq := readFirst(candidates("cpu", "cpu.cfs_quota_us")...)
	per, okp := readFirst(candidates("cpu", "cpu.cfs_period_us")...)
	if okq && okp {
		qv, _ := strconv.ParseFloat(q, 64)
		pv, _ := strconv.ParseFloat(per, 64)
		if qv > 0 && pv > 0 {
			l.CPUs = qv / pv
		}
	}
	l.Cpuset, _ = readFirst(candidates("cpuset", "cpuset.cpus")...)
	if s, ok := readFirst(candidates("memory", "memory.limit_in_bytes")...); ok {
		v, _ := strconv.ParseInt(s, 10, 64)
		// v1 reports "unlimited" as a huge page-aligned number.
		if v > 0 && v < 1<<62 {
			l.MemoryBytes = v
		}
	}
	return l
}

// Group is a cgroup ctrbench created, possibly spanning several v1 hierarchies.
type Group struct {
	Dirs []string // one per hierarchy; the process joins all
}

// Spec is what a group limits; zero values are not limited.
type Spec struct {
	CPUs        float64 // CFS quota in cores
	Cpuset      string
	MemoryBytes int64
	// BlkioWeight is the proportional I/O weight (10..1000), where the
	// kernel's I/O scheduler supports it (see BlkioWeightSupported).
	BlkioWeight uint16
	// Device is "major:minor" of the block device the bps limits apply to.
	Device            string
	ReadBps, WriteBps int64
	// Pids caps the group's processes and threads (pids.max); 0: none.
	Pids int64
	// Always creates the group in every hierarchy ctrbench uses, even
	// without limits: a parent that instances are placed under.
	Always bool
}

// Create makes a cgroup named name (a path below the root, e.g.
// "ctrbench/<campaign>/<instance>") with the given limits.
func Create(name string, sp Spec) (*Group, error) {
	g := &Group{}
	if V2() {
		return g, g.createV2(name, sp)
	}
	type knob struct{ ctrl, file, value string }
	var knobs []knob
	if sp.Always {
		for _, c := range []string{"cpu", "cpuset", "memory", "blkio"} {
			knobs = append(knobs, knob{c, "", ""})
		}
	}
	if sp.CPUs > 0 {
		const period = 100000
		knobs = append(knobs, knob{"cpu", "cpu.cfs_period_us", strconv.Itoa(period)},
			knob{"cpu", "cpu.cfs_quota_us", strconv.Itoa(int(sp.CPUs * period))})
	}
	if sp.Cpuset != "" {
		knobs = append(knobs, knob{"cpuset", "cpuset.cpus", sp.Cpuset})
	}
	if sp.MemoryBytes > 0 {
		knobs = append(knobs, knob{"memory", "memory.limit_in_bytes", strconv.FormatInt(sp.MemoryBytes, 10)})
	}
	if sp.BlkioWeight > 0 {
		file := "blkio.weight"
		if _, err := os.Stat(filepath.Join(Root, "blkio", file)); err != nil {
			file = "blkio.bfq.weight"
		}
		knobs = append(knobs, knob{"blkio", file, strconv.Itoa(int(sp.BlkioWeight))})
	}
	if sp.Pids > 0 {
		knobs = append(knobs, knob{"pids", "pids.max", strconv.FormatInt(sp.Pids, 10)})
	}
	if sp.ReadBps > 0 {
		knobs = append(knobs, knob{"blkio", "blkio.throttle.read_bps_device", fmt.Sprintf("%s %d", sp.Device, sp.ReadBps)})
	}
	if sp.WriteBps > 0 {
		knobs = append(knobs, knob{"blkio", "blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", sp.Device, sp.WriteBps)})
	}
	made := map[string]string{}
	for _, k := range knobs {
		dir, ok := made[k.ctrl]
		if !ok {
			dir = filepath.Join(Root, k.ctrl, name)
			if err := mkdirV1(k.ctrl, name); err != nil {
				g.Remove()
				return nil, err
			}
			made[k.ctrl] = dir
			g.Dirs = append(g.Dirs, dir)
		}
		if k.file == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, k.file), []byte(k.value), 0o644); err != nil {
			g.Remove()
			return nil, fmt.Errorf("setting %s=%s: %w", k.file, k.value, err)
		}
	}
	return g, nil
}

// BlkioWeightSupported reports whether the kernel offers proportional block
// I/O weights (a blkio.weight or blkio.bfq.weight file, io.weight on v2).
func BlkioWeightSupported() bool {
	files := []string{filepath.Join(Root, "blkio", "blkio.weight"), filepath.Join(Root, "blkio", "blkio.bfq.weight")}
	if V2() {
		files = []string{filepath.Join(Root, "ctrbench", "io.weight"), filepath.Join(Root, "ctrbench", "io.bfq.weight")}
		_ = os.WriteFile(filepath.Join(Root, "cgroup.subtree_control"), []byte("+io"), 0o644)
		if err := os.Mkdir(filepath.Join(Root, "ctrbench"), 0o755); err == nil {
			defer os.Remove(filepath.Join(Root, "ctrbench"))
		}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// mkdirV1 creates the group level by level; a new cpuset group starts with
// empty cpus and mems, so each level inherits its parent's before use.
func mkdirV1(ctrl, name string) error {
	dir := filepath.Join(Root, ctrl)
	for _, part := range strings.Split(name, "/") {
		parent := dir
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if ctrl == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				cur, _ := os.ReadFile(filepath.Join(dir, f))
				if strings.TrimSpace(string(cur)) != "" {
					continue
				}
				pv, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					return fmt.Errorf("reading %s of %s: %w", f, parent, err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), pv, 0o644); err != nil {
					return fmt.Errorf("initialising %s of %s: %w", f, dir, err)
				}
			}
		}
	}
	return nil
}

func (g *Group) createV2(name string, sp Spec) error {
	dir := Root
	for _, part := range strings.Split(name, "/") {
		// Controllers must be enabled in each parent for the child to use them.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +cpuset +memory +io +pids"), 0o644)
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
	}
	g.Dirs = []string{dir}
	set := func(file, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			return fmt.Errorf("setting %s=%s: %w", file, v, err)
		}
		return nil
	}
	var errs []error
	if sp.CPUs > 0 {
		errs = append(errs, set("cpu.max", fmt.Sprintf("%d 100000", int(sp.CPUs*100000))))
	}
	if sp.Cpuset != "" {
		errs = append(errs, set("cpuset.cpus", sp.Cpuset))
	}
	if sp.MemoryBytes > 0 {
		errs = append(errs, set("memory.max", strconv.FormatInt(sp.MemoryBytes, 10)))
	}
	if sp.BlkioWeight > 0 {
		errs = append(errs, set("io.weight", strconv.Itoa(int(sp.BlkioWeight))))
	}
	if sp.Pids > 0 {
		errs = append(errs, set("pids.max", strconv.FormatInt(sp.Pids, 10)))
	}
	if sp.ReadBps > 0 || sp.WriteBps > 0 {
		v := sp.Device
		if sp.ReadBps > 0 {
			v += fmt.Sprintf(" rbps=%d", sp.ReadBps)
		}
		if sp.WriteBps > 0 {
			v += fmt.Sprintf(" wbps=%d", sp.WriteBps)
		}
		errs = append(errs, set("io.max", v))
	}
	return errors.Join(errs...)
}

// SetCPUs changes the group's CFS quota to cores (0: none), for what runs
// in it from now on and below it (an emulated machine's quota, trial by
// trial).
func (g *Group) SetCPUs(cores float64) error {
	const period = 100000
	quota := int(cores * period)
	if V2() {
		if len(g.Dirs) == 0 {
			return errors.New("the group has no directory")
		}
		v := "max " + strconv.Itoa(period)
		if cores > 0 {
			v = fmt.Sprintf("%d %d", quota, period)
		}
		return os.WriteFile(filepath.Join(g.Dirs[0], "cpu.max"), []byte(v), 0o644)
	}
	dir, ok := g.dirOf("cpu")
	if !ok {
		return errors.New("the group has no cpu controller")
	}
	if cores <= 0 {
		quota = -1
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(quota)), 0o644)
}

// dirOf is the group's directory in controller ctrl's hierarchy (v1).
func (g *Group) dirOf(ctrl string) (string, bool) {
	prefix := filepath.Join(Root, ctrl) + "/"
	for _, d := range g.Dirs {
		if strings.HasPrefix(d, prefix) {
			return d, true
		}
	}
	return "", false
}

// JoinSelf moves the calling process into every directory of dirs.
func JoinSelf(dirs []string) error {
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), pid, 0o644); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", d, err)
		}
	}
	return nil
}

// Remove deletes the group's directories (they must be empty of processes).
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.Dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveTreeWhenIdle waits, up to wait, for the processes in a subtree
// to leave (those of a killed run die a moment after their monitor), then
// removes it as RemoveTree does.
func RemoveTreeWhenIdle(name string, wait time.Duration) []string {
	for end := time.Now().Add(wait); time.Now().Before(end) && TreeBusy(name); {
		time.Sleep(20 * time.Millisecond)
	}
	return RemoveTree(name)
}

// RemoveTree removes a ctrbench cgroup subtree (e.g. "ctrbench/<campaign>")
// in every hierarchy, deepest first; used by clean after a killed run.
func RemoveTree(name string) []string {
	var removed []string
	var bases []string
	if V2() {
		bases = []string{Root}
	} else {
		// Every hierarchy: Docker creates a container's groups in all of
		// them under a cgroup parent ctrbench gave it.
		entries, _ := os.ReadDir(Root)
		for _, e := range entries {
			if fi, err := os.Lstat(filepath.Join(Root, e.Name())); err == nil && fi.IsDir() {
				bases = append(bases, filepath.Join(Root, e.Name()))
			}
		}
	}
	for _, base := range bases {
		r := filepath.Join(base, name)
		var dirs []string
		_ = filepath.WalkDir(r, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if os.Remove(dirs[i]) == nil {
				removed = append(removed, dirs[i])
			}
		}
		// The levels above (e.g. "ctrbench") are ctrbench's too; they go
		// when empty, and stay while another campaign uses them.
		for dir := filepath.Dir(r); dir != base && strings.HasPrefix(dir, base); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
			removed = append(removed, dir)
		}
	}
	return removed
}

// Counters reads the calling process's cgroup counters that telemetry
// reports: throttling, memory peak, block I/O bytes. Missing files are
// skipped (controllers differ between hosts).
func Counters() map[string]float64 {
	out := map[string]float64{}
	kv := func(paths []string) map[string]float64 {
		s, ok := readFirst(paths...)
		if !ok {
			return nil
		}
		m := map[string]float64{}
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(line)
			if len(f) == 2 {
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					m[f[0]] = v
				}
			}
		}
		return m
	}
	if V2() {
		if m := kv(candidates("", "cpu.stat")); m != nil {
			out["cpu_throttled_periods"] = m["nr_throttled"]
			out["cpu_throttled_seconds"] = m["throttled_usec"] / 1e6
		}
		if s, ok := readFirst(candidates("", "memory.peak")...); ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				out["memory_peak_bytes"] = v
			}
		}
		if s, ok := readFirst(candidates("", "io.stat")...); ok {
			var r, w float64
			for _, line := range strings.Split(s, "\n") {
				for _, f := range strings.Fields(line) {
					if v, ok := strings.CutPrefix(f, "rbytes="); ok {
						x, _ := strconv.ParseFloat(v, 64)
						r += x
					}
					if v, ok := strings.CutPrefix(f, "wbytes="); ok {
						x, _ := strconv.ParseFloat(v, 64)
						w += x
					}
				}
			}
			out["blkio_read_bytes"], out["blkio_write_bytes"] = r, w
		}
		return out
	}
	if m := kv(candidates("cpu", "cpu.stat")); m != nil {
		out["cpu_throttled_periods"] = m["nr_throttled"]
		out["cpu_throttled_seconds"] = m["throttled_time"] / 1e9
	}
	if s, ok := readFirst(candidates("memory", "memory.max_usage_in_bytes")...); ok {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			out["memory_peak_bytes"] = v
		}
	}
	// "8:0 Read 4096" lines, and a "Total" line; Read and Write summed over devices.
	if s, ok := readFirst(candidates("blkio", "blkio.throttle.io_service_bytes")...); ok {
		var r, w float64
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			v, _ := strconv.ParseFloat(f[2], 64)
			switch f[1] {
			case "Read":
				r += v
			case "Write":
				w += v
			}
		}
		out["blkio_read_bytes"], out["blkio_write_bytes"] = r, w
	}
	return out
}

// Procs lists the processes in group name (a path below the root), as
// the host numbers them: from the unified hierarchy, or from the first v1
// hierarchy that has the group. None when the group does not exist.
func Procs(name string) []int {
	for _, base := range procBases() {
		b, err := os.ReadFile(filepath.Join(base, name, "cgroup.procs"))
		if err != nil {
			continue
		}
		var out []int
		for _, l := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(l); err == nil {
				out = append(out, pid)
			}
		}
		return out
	}
	return nil
}

// procBases are the hierarchies Procs reads, in order.
func procBases() []string {
	if V2() {
		return []string{Root}
	}
	return []string{filepath.Join(Root, "pids"), filepath.Join(Root, "cpu"), filepath.Join(Root, "memory"), filepath.Join(Root, "unified")}
}

// TreeBusy reports whether a process is in group name or a group below it.
func TreeBusy(name string) bool {
	for _, base := range procBases() {
		root := filepath.Join(base, name)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		busy := false
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && len(Procs(strings.TrimPrefix(p, base+"/"))) > 0 {
				busy = true
				return filepath.SkipAll
			}
			return nil
		})
		return busy
	}
	return false
}

// Add moves process pid into the group, in every hierarchy it spans.
func (g *Group) Add(pid int) error {
	for _, d := range g.Dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving %d into cgroup %s: %w", pid, d, err)
		}
	}
	return nil
}

// OOMKills is how many processes the kernel's OOM killer has killed in
// the calling process's memory cgroup (memory.events' oom_kill on v2,
// memory.oom_control's on v1); ok is false where neither says.
func OOMKills() (n float64, ok bool) {
	files := candidates("", "memory.events")
	key := "oom_kill"
	if !V2() {
		files = candidates("memory", "memory.oom_control")
	}
	s, found := readFirst(files...)
	if !found {
		return 0, false
	}
	for _, line := range strings.Split(s, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			v, err := strconv.ParseFloat(f[1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// Kill ends every process in the group (SIGKILL; cgroup.kill where the
// kernel has it), again until none is left or a second has passed: a
// process that forks as it is killed leaves children that the next round
// finds. It returns how many processes it signalled.
func (g *Group) Kill() int {
	n := 0
	for _, dir := range g.Dirs {
		if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644) == nil {
			break
		}
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		left := 0
		for _, dir := range g.Dirs {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						n++
					}
					left++
				}
			}
		}
		if left == 0 {
			break
		}
	}
	return n
}
