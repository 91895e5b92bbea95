package userkinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/tailbuf"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
	"github.com/ctrbench/ctrbench/internal/workloads"
)

// A service is a user's long-running server — their command, on their
// port — as the server role of a chain, and a client that drives it:
// ctrbench's HTTP generator or a command of the user's. The server's agent
// starts the command, waits until it answers (the ready probe), and then
// announces a control address of its own: the client reads the service's
// host from it, drives host:port, and says "done" there, and the server's
// agent stops the command and returns its log.

// serviceLogTail is how much of the server's output a trial keeps.
const serviceLogTail = 8 << 10

// serviceStopGrace is how long a server has between SIGTERM and SIGKILL.
const serviceStopGrace = 5 * time.Second

// Client types a service may be driven by.
const (
	clientHTTP      = workloads.GenHTTP
	clientTCPRR     = workloads.GenTCPRR     // against an echo server
	clientTCPStream = workloads.GenTCPStream // against a sink
	clientExec      = "exec"
)

// clientTypes are the client types, as a message lists them.
const clientTypes = clientHTTP + " (ctrbench's HTTP generator), " + clientTCPRR + " (request/response against an echo server), " +
	clientTCPStream + " (bulk send to a sink), " + clientExec + " (a command of yours)"

func init() {
	workload.Register(&workload.Spec{
		Type:    "service",
		Summary: "a server of yours (its command, its port), made ready by a probe and driven by one of ctrbench's generators (HTTP, request/response to an echo, bulk to a sink) or by a client command of yours",
		Params: []workload.Param{
			workload.P("command", workload.List, "", "the server's program and arguments, run in the foreground, e.g. [redis-server, --port, \"6379\", --save, \"\"]; found as exec's command is. Takes {trial} and {cell.<factor>}"),
			workload.P("tools", workload.List, "", "more programs of this machine the server or the client runs, put into the agent image"),
			imageParam, imageArchiveParam,
			workload.P("env", workload.Mapping, "", "environment variables of the server"),
			workload.P("workdir", workload.String, "", "the server's working directory (default: the trial's data directory)"),
			workload.P("port", workload.Int, "0", "the TCP port the server listens on (on every address of its hosting entity)").Range(0, 65535),
			{Name: "ready", Kind: workload.Object, Doc: "when the server is ready: {tcp: true} (a connection is accepted, the default) or {http: /path} (a GET answers with a status below 500), with timeout (default 20s)", Check: checkReady, CheckDoc: "a mapping such as {tcp: true}, {http: /health, timeout: 30s}"},
			{Name: "client", Kind: workload.Object, Doc: "what drives the server: {type: http.get, params: {path, concurrency, duration, rate, request_timeout}}, {type: net.tcp_rr, params: {duration, request_size, burst, socket_buffer, nodelay}} against an echo server, {type: net.tcp_stream, params: {duration, message_size}} against a sink, or {type: exec, params: {command, format, metrics, …}} whose command may name {server.host} and {server.port}", Check: checkClient, CheckDoc: "a mapping {type: http.get, net.tcp_rr, net.tcp_stream or exec, params: {…}}"},
		},
		Roles: []string{workload.Server, workload.Client},
		Run:   map[string]workload.RunFunc{workload.Server: serviceServer, workload.Client: serviceClient},
		// Redis (scripts/setup.sh installs it) driven by its own
		// benchmark: a real server and client nobody here wrote.
		Smoke: map[string]string{
			"command": `["redis-server","--port","16379","--save","","--appendonly","no","--protected-mode","no"]`,
			"port":    "16379",
			"client": `{"type":"exec","params":{"command":["redis-benchmark","-h","{server.host}","-p","{server.port}","-n","2000","-c","4","-t","ping","-q","--csv"],` +
				`"format":"csv","metrics":{"ping_rps":{"select":"PING_INLINE,rps","unit":"req/s","better":"higher"}}}}`,
		},
		Serves: workload.Serves{
			MorePorts: servicePorts,
			Ready:     serviceReady,
		},
		Trial: workload.Trial{
			Measures: serviceMeasures,
		},
		User: workload.User{
			Declared:          serviceMetrics,
			NamedTools:        serviceTools,
			TakesPlaceholders: []string{"command", "env", "workdir", "client"},
			BoundByRun:        map[string][]string{"client": {"server.host", "server.port"}},
			Role:              serviceRole,
			Portable:          servicePortable,
			Validate:          validateService,
		},
	})
}

// readyProbe is the ready parameter.
type readyProbe struct {
	TCP     bool
	HTTP    string
	Timeout time.Duration
}

func checkReady(v string) (string, error) {
	var raw map[string]string
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return "", errors.New("want {tcp: true} or {http: /path}, each with an optional timeout")
	}
	r := readyProbe{Timeout: 20 * time.Second}
	for k, x := range raw {
		switch k {
		case "tcp":
			b, err := strconv.ParseBool(x)
			if err != nil {
				return "", fmt.Errorf("tcp: %q is not true or false", x)
			}
			r.TCP = b
		case "http":
			if !strings.HasPrefix(x, "/") {
				return "", fmt.Errorf("http: %q is not a path starting with /", x)
			}
			r.HTTP = x
		case "timeout":
			d, err := time.ParseDuration(x)
			if err != nil || d <= 0 {
				return "", fmt.Errorf("timeout: %q is not a positive duration such as 20s", x)
			}
			r.Timeout = d
		default:
			return "", fmt.Errorf("unknown key %q; allowed: tcp, http, timeout", k)
		}
	}
	if r.TCP && r.HTTP != "" {
		return "", errors.New("one probe: tcp or http, not both")
	}
	// The canonical form is one this check reads again (the agent does).
	canon := map[string]string{"timeout": r.Timeout.String()}
	if r.HTTP != "" {
		canon["http"] = r.HTTP
	} else {
		canon["tcp"] = "true"
	}
	b, _ := json.Marshal(canon)
	return string(b), nil
}

func readyOf(p workload.Values) readyProbe {
	r := readyProbe{TCP: true, Timeout: 20 * time.Second}
	var raw map[string]string
	if json.Unmarshal([]byte(p.String("ready")), &raw) == nil {
		if d, err := time.ParseDuration(raw["timeout"]); err == nil {
			r.Timeout = d
		}
		r.HTTP = raw["http"]
		r.TCP = r.HTTP == ""
	}
	return r
}

// serviceClientSpec is the client parameter: a generator or a command.
type serviceClientSpec struct {
	Type   string          `json:"type"`
	Params json.RawMessage `json:"params,omitempty"`
}

func checkClient(v string) (string, error) {
	var c serviceClientSpec
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return "", errors.New("want {type: T, params: {…}} with T one of " + clientTypes)
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal([]byte(v), &keys)
	for k := range keys {
		if k != "type" && k != "params" {
			return "", fmt.Errorf("unknown key %q; allowed: type, params", k)
		}
	}
	if _, _, err := clientValues(c); err != nil {
		return "", err
	}
	b, _ := json.Marshal(c)
	return string(b), nil
}

// clientValues resolves a client's parameters with its type's own rules.
func clientValues(c serviceClientSpec) (*workload.Spec, workload.Values, error) {
	var spec *workload.Spec
	if g, ok := workloads.GeneratorOf(c.Type); ok {
		spec = g.Params
	} else if c.Type == clientExec {
		spec, _ = workload.Lookup(clientExec)
	} else {
		return nil, nil, fmt.Errorf("client type %q: allowed: %s", c.Type, clientTypes)
	}
	user := map[string]string{}
	if len(c.Params) > 0 {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(c.Params, &raw); err != nil {
			return nil, nil, errors.New("client params: want a mapping")
		}
		for k, x := range raw {
			var s string
			if json.Unmarshal(x, &s) == nil {
				user[k] = s
			} else {
				user[k] = string(x) // a list or mapping, as JSON
			}
		}
	}
	v, errs := spec.Resolve(user)
	if errs != nil {
		var msgs []string
		for _, k := range slices.Sorted(maps.Keys(errs)) {
			msgs = append(msgs, fmt.Sprintf("%s: %v", k, errs[k]))
		}
		return nil, nil, fmt.Errorf("client %s: %s", c.Type, strings.Join(msgs, "; "))
	}
	return spec, v, nil
}

func clientOf(p map[string]string) (serviceClientSpec, *workload.Spec, workload.Values, error) {
	var c serviceClientSpec
	if err := json.Unmarshal([]byte(p["client"]), &c); err != nil {
		return c, nil, nil, errors.New("service: no client")
	}
	spec, v, err := clientValues(c)
	return c, spec, v, err
}

func validateService(v workload.Values) map[string]error {
	errs := map[string]error{}
	fromImage := v.String(workload.ParamImage) != "" || v.String(workload.ParamImageArchive) != ""
	if cmd := v.List("command"); (len(cmd) == 0 && !fromImage) || (len(cmd) > 0 && cmd[0] == "") {
		errs["command"] = errors.New("a service needs the command that runs its server in the foreground, e.g. command: [redis-server, --port, \"6379\"] (with image or image_archive, the image's own by default)")
	}
	if v.String(workload.ParamImage) != "" && v.String(workload.ParamImageArchive) != "" {
		errs[workload.ParamImage] = errors.New("one of image and image_archive, not both")
	}
	if v.Int("port") == 0 {
		errs["port"] = errors.New("a service needs the port its server listens on, 1 to 65535")
	}
	if v.String("client") == "" {
		errs["client"] = fmt.Errorf("a service needs a client: {type: %s, params: {path: /}} or {type: %s, params: {command: […], metrics: {…}}}", clientHTTP, clientExec)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// serviceMetrics are the client's.
func serviceMetrics(params map[string]string) ([]workload.Metric, []workload.Histogram) {
	c, spec, v, err := clientOf(params)
	if err != nil {
		return nil, nil
	}
	if g, ok := workloads.GeneratorOf(c.Type); ok {
		return g.Metrics, g.Histograms
	}
	return spec.User.Declared(v)
}

func serviceTools(params map[string]string) []workload.Tool {
	tools := execTools(params)
	if _, spec, v, err := clientOf(params); err == nil && spec.User.NamedTools != nil {
		tools = append(tools, spec.User.NamedTools(v)...)
	}
	return tools
}

// serviceServer starts the user's server, announces it once the probe
// passes, and stops it when the client says done.
func serviceServer(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	argv, err := commandLine(p)
	if err != nil {
		return nil, "", err
	}
	cmd, err := userCommand(context.WithoutCancel(ctx), argv, p, env)
	if err != nil {
		return nil, "", err
	}
	seeCommand(env, argv)
	logs := tailbuf.New(serviceLogTail)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting the server %s: %w", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error { return stopGroup(cmd, exited) }

	probeHost := env.Bind
	if probeHost == "" || probeHost == "0.0.0.0" {
		probeHost = "127.0.0.1"
	}
	addr := net.JoinHostPort(probeHost, p.String("port"))
	if err := awaitReady(ctx, readyOf(p), addr, exited); err != nil {
		stop()
		return nil, logs.String(), fmt.Errorf("the server %s never became ready on %s: %w; its log ends: %s", argv[0], addr, err, quoteTail(logs.String()))
	}
	ln, err := workloads.Listen(ctx, env)
	if err != nil {
		stop()
		return nil, logs.String(), err
	}
	done := make(chan struct{})
	var once sync.Once
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/done" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			once.Do(func() { close(done) })
		}
	})}
	go srv.Serve(ln)
	defer workloads.ShutdownGently(ctx, srv)
	env.Ready(ln.Addr().String())
	select {
	case <-done:
		if err := stop(); err != nil {
			return nil, logs.String(), err
		}
		return nil, logs.String(), nil
	case err := <-exited:
		return nil, logs.String(), fmt.Errorf("the server %s exited before its client was done: %v; its log ends: %s", argv[0], exitText(err), quoteTail(logs.String()))
	case <-ctx.Done():
		stop()
		return nil, logs.String(), ctx.Err()
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// stopGroup ends a server: SIGTERM to its process group, SIGKILL after
// the grace. A server that ends by the signal it was sent ended well.
func stopGroup(cmd *exec.Cmd, exited chan error) error {
	if cmd.Process == nil {
		return nil
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(serviceStopGrace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return nil
	}
}

// awaitReady probes addr until it answers, the probe's timeout passes or
// the server exits.
func awaitReady(ctx context.Context, r readyProbe, addr string, exited chan error) error {
	deadline := time.Now().Add(r.Timeout)
	client := &http.Client{Timeout: time.Second}
	var last error
	for {
		select {
		case err := <-exited:
			exited <- err // for the caller's stop
			return fmt.Errorf("it exited (%s)", exitText(err))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if r.HTTP != "" {
			resp, err := client.Get("http://" + addr + r.HTTP)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode < 500 {
					return nil
				}
				err = fmt.Errorf("GET %s: status %d", r.HTTP, resp.StatusCode)
			}
			last = err
		} else {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				return nil
			}
			last = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %s (last: %v)", r.Timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// servicePorts is the service's own port, which a published network
// publishes besides its agent's control port.
func servicePorts(v workload.Values) []vocab.Port {
	return []vocab.Port{{Number: int(v.Int("port")), Proto: "tcp"}}
}

// serviceReady is the ready parameter as a readiness probe of the
// service's port.
func serviceReady(v workload.Values) *vocab.Probe {
	r := readyOf(v)
	return &vocab.Probe{Port: int(v.Int("port")), Path: r.HTTP}
}

// serviceClient drives the service: env.Target is the server agent's
// control address, whose host is the service's.
func serviceClient(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	host, _, err := net.SplitHostPort(env.Target)
	if err != nil {
		return nil, "", fmt.Errorf("service client: bad target %q: %w", env.Target, err)
	}
	// Where the server's engine published the service's port, if it did.
	host, port, err := net.SplitHostPort(env.Reach(host, int(p.Int("port")), "tcp"))
	if err != nil {
		return nil, "", fmt.Errorf("service client: %w", err)
	}
	c, spec, v, err := clientOf(p)
	if err != nil {
		return nil, "", err
	}
	var obs []result.Observation
	var raw string
	if g, ok := workloads.GeneratorOf(c.Type); ok {
		obs, raw, err = g.Run(ctx, v, env, net.JoinHostPort(host, port))
	} else {
		bound, berr := spec.Bind(mustMarshal(v), map[string]string{"server.host": host, "server.port": port})
		if berr != nil {
			return nil, "", berr
		}
		var bv workload.Values
		_ = json.Unmarshal([]byte(bound), &bv)
		obs, raw, err = runExec(ctx, bv, env)
	}
	if derr := workloads.SayDone(ctx, env.Target); derr != nil && err == nil {
		err = fmt.Errorf("telling the server's agent the run is over: %w", derr)
	}
	return obs, raw, err
}

func mustMarshal(v workload.Values) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// servicePortable: a client that is one of ctrbench's generators runs in
// any image the agent is in; the server and an exec client need their
// programs.
func servicePortable(params map[string]string, role string) bool {
	c, _, _, err := clientOf(params)
	return role == workload.Client && err == nil && c.Type != clientExec
}

// serviceRole: the server runs the service's command from its image; the
// client its own (an exec client's command, image or image_archive, in
// the client parameter), else ctrbench's generator in its agent image.
func serviceRole(params map[string]string, role string) workload.RoleRun {
	if role == workload.Server {
		return workload.RoleRun{Image: params[workload.ParamImage], Archive: params[workload.ParamImageArchive], Command: workload.Values(params).List("command")}
	}
	r := workload.RoleRun{Param: "client"}
	if _, _, v, err := clientOf(params); err == nil {
		r.Image, r.Archive, r.Command = v[workload.ParamImage], v[workload.ParamImageArchive], v.List("command")
	}
	return r
}

// serviceMeasures is how long a service trial measures: its client's
// duration (the client's own default when the file gives none); false for
// a client without one (a command of yours).
func serviceMeasures(params map[string]string) (time.Duration, bool) {
	var client struct {
		Type   string         `json:"type"`
		Params map[string]any `json:"params"`
	}
	if json.Unmarshal([]byte(params["client"]), &client) != nil {
		return 0, false
	}
	values := map[string]string{}
	if g, ok := workloads.GeneratorOf(client.Type); ok {
		if p, ok := g.Params.Param("duration"); ok {
			values["duration"] = p.Default
		}
	}
	for k, v := range client.Params {
		values[k] = fmt.Sprint(v)
	}
	d, err := time.ParseDuration(values["duration"])
	return d, err == nil && d > 0
}
