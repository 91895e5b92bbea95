package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// serverGrace is how long a server may take to finish after its client.
const serverGrace = 15 * time.Second

// trial runs one planned trial and returns its record; it never returns an
// error: what went wrong is the trial's status and reason.
func (o *Options) trial(ctx context.Context, cell result.Cell, pt spec.PlannedTrial) result.Trial {
	t := result.Trial{CampaignID: o.CampaignID, CellID: cell.ID, Seq: pt.Seq, Repetition: pt.Repetition, Warmup: pt.Warmup, Started: time.Now().UTC()}
	tctx, cancel := context.WithTimeout(ctx, o.Experiment.Timeout)
	defer cancel()
	obs, raw, flags, err := o.execute(tctx, cell, pt)
	t.Ended = time.Now().UTC()
	switch {
	case err == nil:
		t.Status, t.Observations, t.Flags = result.OK, obs, flags
	case errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		t.Status = result.Timeout
		t.Error = fmt.Sprintf("timed out after %s (timeout in the experiment file): %v", o.Experiment.Timeout, err)
		t.Raw = raw
	default:
		t.Status, t.Error, t.Raw = result.Failed, err.Error(), raw
	}
	return t
}

// running is an agent being watched: its stdout events arrive on channels.
type running struct {
	name   string
	inst   platform.Instance
	ready  chan string
	result chan *result.Result
	eof    chan struct{}
	other  *strings.Builder // non-event stdout lines, for failure reports
}

func watch(name string, inst platform.Instance) *running {
	r := &running{name: name, inst: inst, ready: make(chan string, 1), result: make(chan *result.Result, 1), eof: make(chan struct{}), other: &strings.Builder{}}
	go func() {
		defer close(r.eof)
		sc := bufio.NewScanner(inst.Stdout())
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ev, ok := result.ParseEvent(sc.Bytes())
			switch {
			case ok && ev.Event == "ready":
				select {
				case r.ready <- ev.Addr:
				default:
				}
			case ok && ev.Event == "result" && ev.Result != nil:
				select {
				case r.result <- ev.Result:
				default:
				}
			default:
				if r.other.Len() < 8<<10 {
					r.other.WriteString(sc.Text() + "\n")
				}
			}
		}
	}()
	return r
}

// exitError explains an agent that ended without a result.
func (r *running) exitError(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ex, err := r.inst.Wait(wctx)
	if err != nil {
		return fmt.Errorf("%s ended its output without a result", r.name)
	}
	msg := strings.TrimSpace(ex.Stderr + "\n" + r.other.String())
	return fmt.Errorf("%s exited with code %d without a result: %s", r.name, ex.Code, lastLines(msg, 10))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// await returns the agent's result, or why there is none.
func (r *running) await(ctx context.Context) (*result.Result, error) {
	select {
	case res := <-r.result:
		return res, nil
	case <-r.eof:
		select {
		case res := <-r.result:
			return res, nil
		default:
		}
		return nil, r.exitError(ctx)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", r.name, ctx.Err())
	}
}

// awaitReady waits for a server's ready event.
func (r *running) awaitReady(ctx context.Context) (string, error) {
	select {
	case addr := <-r.ready:
		return addr, nil
	case res := <-r.result:
		return "", fmt.Errorf("%s ended before it was ready: %s", r.name, res.Error)
	case <-r.eof:
		return "", r.exitError(ctx)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for %s to be ready: %w", r.name, ctx.Err())
	}
}

func (o *Options) execute(ctx context.Context, cell result.Cell, pt spec.PlannedTrial) (obs []result.Observation, raw, flags string, err error) {
	obs, raw, err = o.executeChain(ctx, cell, pt, &flags)
	return obs, raw, flags, err
}

func (o *Options) executeChain(ctx context.Context, cell result.Cell, pt spec.PlannedTrial, flags *string) ([]result.Observation, string, error) {
	ws, ok := workload.Lookup(cell.WorkloadType)
	if !ok {
		return nil, "", fmt.Errorf("unknown workload type %q", cell.WorkloadType)
	}
	params, _ := json.Marshal(cell.Params)
	var started []*running
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.CleanupTimeout)
		defer cancel()
		for _, r := range started {
			_ = r.inst.Remove(cctx)
		}
	}()
	// startAs launches one agent: args, placed as role says.
	startAs := func(role, name string, args []string) (*running, error) {
		pl := spec.PlacementFor(cell.Factors, role)
		p := o.Platforms[pl.Platform]
		// Which counters are the instance's own: a container has its own
		// cgroup (and, off the host network, its own network namespace); a
		// native agent has its own cgroup only under limits.
		var scopes []string
		if pl.Platform != "native" {
			scopes = append(scopes, "cgroup")
			if pl.Network != platform.NetHost {
				scopes = append(scopes, "netns")
			}
		}
		if len(scopes) > 0 {
			args = append(args, "--telemetry", strings.Join(scopes, ","))
		}
		labels := o.labels()
		labels["io.ctrbench.trial"] = strconv.Itoa(pt.Seq)
		labels["io.ctrbench.role"] = role
		lim, err := limitsOf(pl)
		if err != nil {
			return nil, err
		}
		inst, err := p.Start(ctx, platform.InstanceSpec{Name: name, Args: args, Network: pl.Network, Limits: lim, Labels: labels, Storage: pl.Storage})
		if err != nil {
			return nil, fmt.Errorf("starting %s on %s: %w", role, pl.Platform, err)
		}
		r := watch(role, inst)
		started = append(started, r)
		return r, nil
	}
	start := func(role, bind, target string, extra ...string) (*running, error) {
		name := fmt.Sprintf("ctrbench-%s-t%d-%s-%s", o.CampaignID, pt.Seq, role, o.runToken)
		args := []string{"agent", "run", "--workload", cell.WorkloadType, "--role", role, "--params", string(params)}
		args = append(args, extra...)
		if bind != "" {
			args = append(args, "--bind", bind)
		}
		if target != "" {
			args = append(args, "--target", target)
		}
		return startAs(role, name, args)
	}

	// Neighbours (S0's antagonists): in the measured instance, or each in
	// an instance of its own, started and running before the target.
	neighbours := o.neighbours(cell)
	separate := len(neighbours) > 0 && cell.Factors[spec.FPackaging] == spec.PackSeparate
	var sameContainer []string
	var loops []*running
	for i, nb := range neighbours {
		if !separate {
			sameContainer = append(sameContainer, "--antagonist", nb)
			continue
		}
		typ, params := neighbour.Parse(nb)
		name := fmt.Sprintf("ctrbench-%s-t%d-antagonist%d-%s", o.CampaignID, pt.Seq, i+1, o.runToken)
		r, err := startAs(spec.RoleAntagonist, name, []string{"agent", "loop", "--workload", typ, "--params", params})
		if err != nil {
			return nil, "", err
		}
		if _, err := r.awaitReady(ctx); err != nil {
			return nil, "", fmt.Errorf("antagonist %s: %w", typ, err)
		}
		loops = append(loops, r)
	}

	// A chain of roles: every role but the last is a server, started and
	// ready before the next, which is its client; the last drives the load
	// and is the one measured. tcp_stream is server <- client; S2's
	// ping-pong is pong <- ping <- client.
	roles := ws.RoleList()
	servers := make([]*running, len(roles)-1)
	target := ""
	for i, role := range roles[:len(roles)-1] {
		spl := spec.PlacementFor(cell.Factors, role)
		cpl := spec.PlacementFor(cell.Factors, roles[i+1])
		bind := "0.0.0.0" // a server in its own namespace listens on its own addresses
		if inHostNS(spl) {
			// Bind only the address the client will use: loopback, or the
			// gateway of the ctrbench bridge the client sits on. Never
			// 0.0.0.0 in the host's namespace, which would listen on the
			// real interface.
			bind = "127.0.0.1"
			if !inHostNS(cpl) {
				bind = o.Platforms[cpl.Platform].HostAddr(cpl.Network)
			}
		}
		srv, err := start(role, bind, target)
		if err != nil {
			return nil, "", err
		}
		servers[i] = srv
		addr, err := srv.awaitReady(ctx)
		if err != nil {
			return nil, "", err
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, "", fmt.Errorf("%s announced a bad address %q: %w", role, addr, err)
		}
		host := bind
		if !inHostNS(spl) {
			if host = srv.inst.IP(); host == "" {
				return nil, "", fmt.Errorf("%s has no address on network %s", role, spl.Network)
			}
		}
		target = net.JoinHostPort(host, port)
	}
	driver := roles[len(roles)-1]
	cli, err := start(driver, "", target, sameContainer...)
	if err != nil {
		return nil, "", err
	}
	cres, err := cli.await(ctx)
	if err != nil {
		return nil, "", err
	}
	if separate && cres.Status == result.OK {
		if err := stopNeighbours(ctx, loops, cres); err != nil {
			return nil, "", err
		}
	}
	obs, raw, err := fromResult(cres)
	*flags = cres.Seen[neighbour.FlagKey]
	if err != nil {
		// Servers may wait for a client that never came; they are removed
		// with the trial rather than waited for.
		return nil, raw, err
	}
	// Servers finish once their client is done: the last client first.
	gctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	for i := len(servers) - 1; i >= 0; i-- {
		role := roles[i]
		sres, err := servers[i].await(gctx)
		if err != nil {
			return nil, "", fmt.Errorf("the %s finished but the %s did not: %w", driver, role, err)
		}
		sobs, sraw, err := fromResult(sres)
		if err != nil {
			return nil, sraw, fmt.Errorf("%s: %w", role, err)
		}
		for _, ob := range sobs {
			ob.Metric = role + "." + ob.Metric
			obs = append(obs, ob)
		}
	}
	return obs, "", nil
}

// neighbours lists the cell's antagonists as the agent takes them:
// "TYPE=PARAMS_JSON" with the parameters of that workload in the file, or
// "idle".
func (o *Options) neighbours(cell result.Cell) []string {
	level := cell.Factors[spec.FAntagonist]
	if level == spec.AntagonistIdle {
		return []string{neighbour.Idle}
	}
	var out []string
	for _, name := range spec.Antagonists(level) {
		w, ok := o.Experiment.Workload(name)
		if !ok {
			continue
		}
		p, _ := json.Marshal(w.Params)
		out = append(out, w.Type+"="+string(p))
	}
	return out
}

// stopNeighbours ends antagonists that ran in their own instances and adds
// what they did to the target's result.
func stopNeighbours(ctx context.Context, loops []*running, target *result.Result) error {
	sctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	for _, r := range loops {
		if err := r.inst.Stop(sctx); err != nil {
			return fmt.Errorf("stopping an antagonist: %w", err)
		}
	}
	for _, r := range loops {
		res, err := r.await(sctx)
		if err != nil {
			return fmt.Errorf("antagonist: %w", err)
		}
		if res.Status != result.OK {
			return fmt.Errorf("antagonist %s: %s", res.Workload, res.Error)
		}
		target.Neighbours = append(target.Neighbours, res.Neighbours...)
	}
	return neighbour.Attach(target, target.Started, target.Ended)
}

func fromResult(res *result.Result) ([]result.Observation, string, error) {
	if res.Status != result.OK {
		return nil, res.Raw, fmt.Errorf("%s", res.Error)
	}
	return res.Observations, "", nil
}

// inHostNS reports whether a placement shares the host's network namespace.
func inHostNS(pl spec.Placement) bool {
	return pl.Platform == "native" || pl.Network == platform.NetHost
}

func limitsOf(pl spec.Placement) (platform.Limits, error) {
	var l platform.Limits
	if pl.CPUs != spec.NoLimit && pl.CPUs != "" {
		f, err := strconv.ParseFloat(pl.CPUs, 64)
		if err != nil {
			return l, fmt.Errorf("cpus %q: %w", pl.CPUs, err)
		}
		l.CPUs = f
	}
	if pl.Cpuset != spec.NoLimit {
		l.Cpuset = pl.Cpuset
	}
	if pl.BlkioWeight != spec.NoLimit && pl.BlkioWeight != "" {
		w, err := strconv.Atoi(pl.BlkioWeight)
		if err != nil {
			return l, fmt.Errorf("blkio_weight %q: %w", pl.BlkioWeight, err)
		}
		l.BlkioWeight = uint16(w)
	}
	for _, bps := range []struct {
		level string
		to    *int64
	}{{pl.ReadBps, &l.ReadBps}, {pl.WriteBps, &l.WriteBps}} {
		if bps.level != spec.NoLimit && bps.level != "" {
			n, err := workload.ParseSize(bps.level)
			if err != nil {
				return l, fmt.Errorf("block I/O rate %q: %w", bps.level, err)
			}
			*bps.to = n
		}
	}
	if pl.Memory != spec.NoLimit && pl.Memory != "" {
		n, err := workload.ParseSize(pl.Memory)
		if err != nil {
			return l, fmt.Errorf("memory %q: %w", pl.Memory, err)
		}
		l.MemoryBytes = n
	}
	return l, nil
}
