package userkinds

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/outputs"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/tailbuf"
	"github.com/ctrbench/ctrbench/internal/workload"
	"github.com/ctrbench/ctrbench/internal/workloads"
)

// Exec's own metric: every exec trial records how long the command ran.
const execWallTime = "wall_time"

// maxExecOutput bounds what an exec trial keeps of its command's standard
// output, the text its metrics are read from; more fails the trial.
const maxExecOutput = 16 << 20

// execStderrTail is how much of the command's standard error a failed
// trial quotes.
const execStderrTail = 4 << 10

func init() {
	workload.Register(&workload.Spec{
		Type:    "exec",
		Summary: "a command of yours, run in the hosting entity; its numbers read from its output by a declared metrics contract, its wall time always",
		Params: []workload.Param{
			workload.P("command", workload.List, "", "the program and its arguments, e.g. [sysbench, cpu, run]; a name without / is looked up in PATH, and on a container platform the program (with its shared libraries) goes into the agent image. Takes {trial} and {cell.<factor>} placeholders"),
			workload.P("tools", workload.List, "", "more programs of this machine the command runs (a script's), put into the agent image with their shared libraries on container platforms, e.g. [sysbench]"),
			imageParam, imageArchiveParam,
			workload.P("env", workload.Mapping, "", "environment variables added to the agent's, e.g. {GOMAXPROCS: \"2\"}"),
			workload.P("workdir", workload.String, "", "the directory the command runs in (default: the trial's data directory; from a user's image, its WORKDIR)"),
			workload.P("timeout", workload.Duration, "0s", "kills the command (its whole process group) after this long and fails the trial; 0 leaves it to the trial's timeout").Range(0, 86400),
			workload.P("format", workload.Enum, string(outputs.JSON), "how the standard output carries the metrics").OneOf(formatNames()...),
			{Name: "metrics", Kind: workload.Object, Doc: "the metrics the output carries, in order (the first is the headline): name -> {path | select | pattern, unit, better: higher|lower, aggregate}", Check: checkMetricsParam, CheckDoc: "a mapping of metric names to {path|select|pattern, unit, better}, e.g. {ops: {path: result.ops, unit: ops/s, better: higher}}"},
		},
		Run:   map[string]workload.RunFunc{workload.Main: runExec},
		Smoke: map[string]string{"command": `["true"]`},
		User: workload.User{
			Declared:          execMetrics,
			NamedTools:        execTools,
			TakesPlaceholders: []string{"command", "env", "workdir"},
			Validate:          validateExec,
		},
	})
}

// A user's image to run from, instead of this machine's programs.
var (
	imageParam        = workload.P(workload.ParamImage, workload.String, "", "an image in the machine's Docker engine (e.g. local/httpd:1) to run from: every role runs in it, ctrbench's agent put into it; the command is the image's")
	imageArchiveParam = workload.Param{Name: workload.ParamImageArchive, Kind: workload.String, File: true,
		Doc: "a docker save or OCI-layout archive (a path relative to the experiment file) to run from, as image"}
)

func formatNames() []string {
	var out []string
	for _, f := range outputs.Formats() {
		out = append(out, string(f))
	}
	return out
}

// contractOf is the metrics contract of exec parameters; its metrics were
// checked when the file was read.
func contractOf(params map[string]string) outputs.Contract {
	c := outputs.Contract{Format: outputs.Format(params["format"])}
	_ = json.Unmarshal([]byte(params["metrics"]), &c.Metrics)
	return c
}

// checkMetricsParam reads the metrics mapping (JSON, keys in the file's
// order) into the contract's ordered list, as JSON.
func checkMetricsParam(v string) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "[") { // already canonical
		var ms []outputs.Metric
		if err := json.Unmarshal([]byte(v), &ms); err != nil {
			return "", err
		}
		b, _ := json.Marshal(ms)
		return string(b), nil
	}
	dec := json.NewDecoder(strings.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", errors.New("want a mapping of metric names to their selectors")
	}
	var ms []outputs.Metric
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		name, _ := t.(string)
		var keys map[string]string
		if err := dec.Decode(&keys); err != nil {
			return "", fmt.Errorf("metric %s: want a mapping of {path|select|pattern, unit, better, aggregate} to strings", name)
		}
		m, err := outputs.MetricFromKeys(name, keys)
		if err != nil {
			return "", err
		}
		ms = append(ms, m)
	}
	b, _ := json.Marshal(ms)
	return string(b), nil
}

// validateExec checks what needs several parameters: a command, and the
// metrics against their format.
func validateExec(v workload.Values) map[string]error {
	errs := map[string]error{}
	cmd := v.List("command")
	fromImage := v.String(workload.ParamImage) != "" || v.String(workload.ParamImageArchive) != ""
	if (len(cmd) == 0 && !fromImage) || (len(cmd) > 0 && cmd[0] == "") {
		errs["command"] = errors.New("exec needs a command: the program and its arguments, e.g. command: [sysbench, cpu, run] (with image or image_archive, the image's own by default)")
	}
	if v.String(workload.ParamImage) != "" && v.String(workload.ParamImageArchive) != "" {
		errs[workload.ParamImage] = errors.New("one of image and image_archive, not both")
	}
	c := contractOf(v)
	var problems []error
	if len(c.Metrics) > 0 { // none: the wall time is the headline
		for _, p := range c.Check() {
			problems = append(problems, p)
		}
	}
	for _, m := range c.Metrics {
		if m.Name == execWallTime {
			problems = append(problems, outputs.Problem{Metric: m.Name, Msg: fmt.Sprintf("every exec trial records its own %s (the command's wall time); give yours another name", execWallTime)})
		}
	}
	if len(problems) > 0 {
		errs["metrics"] = errors.Join(problems...) // each workload.Located
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// execMetrics are the declared metrics, then the wall time.
func execMetrics(params map[string]string) ([]workload.Metric, []workload.Histogram) {
	var out []workload.Metric
	for _, m := range contractOf(params).Metrics {
		out = append(out, workload.Metric{Name: m.Name, Unit: m.Unit, Better: m.Better, Doc: "declared by the experiment file"})
	}
	return append(out, workload.Metric{Name: execWallTime, Unit: "s", Better: result.Lower, Doc: "the command's wall time, start to exit"}), nil
}

// execTools is the command's program when it is one of this machine's: it
// goes into the agent image, so the same binary runs on every platform.
func execTools(params map[string]string) []workload.Tool {
	v := workload.Values(params)
	if v.String(workload.ParamImage) != "" || v.String(workload.ParamImageArchive) != "" {
		return nil // the image's programs run
	}
	var out []workload.Tool
	names := v.List("tools")
	if cmd := v.List("command"); len(cmd) > 0 {
		names = append([]string{cmd[0]}, names...)
	}
	for _, name := range names {
		if strings.Contains(name, "{") {
			continue
		}
		if _, err := exec.LookPath(name); err == nil {
			out = append(out, workload.Tool{Binary: name})
		}
	}
	return out
}

func runExec(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	argv, err := commandLine(p)
	if err != nil {
		return nil, "", err
	}
	if d := p.Duration("timeout"); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	cmd, err := userCommand(ctx, argv, p, env)
	if err != nil {
		return nil, "", err
	}
	seeCommand(env, argv)
	out := outputs.NewCapture(maxExecOutput)
	errTail := tailbuf.New(execStderrTail)
	cmd.Stdout, cmd.Stderr = out, errTail
	start := time.Now()
	runErr := cmd.Run()
	wall := time.Since(start)
	// What the command left running in its process group (a daemon, a
	// background job, a fork loop's children) ends with it: the next
	// trial must not share the machine with it.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	stdout, overflow := out.Bytes()
	raw := outputs.Tail(stdout) + "\nstandard error:\n" + errTail.String()
	switch {
	case ctx.Err() != nil:
		return nil, raw, fmt.Errorf("%s: killed after %s (timeout): %w; its standard error ends: %s", argv[0], wall.Round(time.Millisecond), ctx.Err(), quoteTail(errTail.String()))
	case runErr != nil:
		return nil, raw, fmt.Errorf("%s: %w; its standard error ends: %s", argv[0], runErr, quoteTail(errTail.String()))
	}
	c := contractOf(p)
	var obs []result.Observation
	if len(c.Metrics) > 0 {
		if overflow != nil {
			return nil, raw, fmt.Errorf("%s: %w", argv[0], overflow)
		}
		vals, err := c.Parse(stdout)
		if err != nil {
			return nil, raw, fmt.Errorf("%s: %w", argv[0], err)
		}
		for _, v := range vals {
			obs = append(obs, result.Observation{Metric: v.Name, Value: v.Value, Unit: v.Unit, Better: v.Better})
		}
	}
	obs = append(obs, result.Observation{Metric: execWallTime, Value: wall.Seconds(), Unit: "s", Better: result.Lower})
	return obs, raw, nil
}

// SeenCommand is the key under which a user's workload records the
// command it ran (as JSON), with each trial.
const SeenCommand = "command"

func seeCommand(env workload.Env, argv []string) {
	if env.See != nil {
		b, _ := json.Marshal(argv)
		env.See(SeenCommand, string(b))
	}
}

// commandLine is the command the parameters name, or, from a user's image
// when they name none, the image's own (ENTRYPOINT then CMD, which the
// platform hands the agent).
func commandLine(p workload.Values) ([]string, error) {
	if argv := p.List("command"); len(argv) > 0 {
		return argv, nil
	}
	var argv []string
	if s := os.Getenv(invocation.ImageCommandEnv); s != "" {
		_ = json.Unmarshal([]byte(s), &argv)
	}
	if len(argv) == 0 {
		return nil, errors.New("no command: the file names none and the image has neither ENTRYPOINT nor CMD")
	}
	return argv, nil
}

// userCommand is a user's command as its hosting entity runs it: found
// beside ctrbench or in PATH, or, for a user's image unpacked for a host
// process (env.Root), in the image and run chrooted there. It runs in the
// workdir parameter, by default the image's WORKDIR when it runs from one
// (the platform gives it) and else the trial's data directory. Its
// environment is the agent's (a platform running an image gives the agent
// the image's) and the env parameter.
func userCommand(ctx context.Context, argv []string, p workload.Values, env workload.Env) (*exec.Cmd, error) {
	dir := p.String("workdir")
	if wd, fromImage := os.LookupEnv(invocation.ImageWorkdirEnv); fromImage && dir == "" {
		dir = cmp.Or(wd, "/") // the image's WORKDIR, as in its containers
	}
	var path string
	var err error
	if env.Root == "" {
		path, err = execPath(argv[0])
		if dir == "" {
			dir = env.DataDir
		}
	} else {
		path, err = lookIn(env.Root, argv[0])
	}
	if err != nil {
		return nil, err
	}
	cmd := workloads.ToolCommand(ctx, path, argv[1:]...)
	cmd.SysProcAttr.Chroot = env.Root
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range p.Mapping("env") {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd, nil
}

// lookIn finds a program in the root filesystem of an image, through the
// PATH the agent has (the image's): the path inside the image.
func lookIn(root, name string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			return "", fmt.Errorf("exec: %s is not in the image", name)
		}
		return name, nil
	}
	path := cmp.Or(os.Getenv("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Lstat(filepath.Join(root, d, name)); err == nil {
			return filepath.Join(d, name), nil
		}
	}
	return "", fmt.Errorf("exec: %s not found in the image's PATH (%s)", name, path)
}

// execPath finds the command's program: beside ctrbench or in PATH for a
// bare name (lookTool: in an agent image, tools sit beside the binary),
// as written otherwise.
func execPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	p, err := workloads.FindProgram(name)
	if err != nil {
		return "", fmt.Errorf("exec: %s not found in PATH (%s) of the hosting entity", name, os.Getenv("PATH"))
	}
	return p, nil
}

// quoteTail quotes the end of a command's standard error for a message.
func quoteTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(nothing)"
	}
	return fmt.Sprintf("%q", s)
}
