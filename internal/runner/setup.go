package runner

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/ctrbench/ctrbench/internal/delayline"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// setUnderlay gives the lab's emulated hosts the cell's underlay and
// returns what records, once the trial is done, what the underlay's delay
// lines did during it (nil when the lab has none), for the caller to defer.
func setUnderlay(lab *netlab.Lab, c *plan.Cell) (func(out *Outcome), error) {
	if err := lab.SetUnderlay(c.Underlay); err != nil {
		return nil, platformErr(err)
	}
	before, ok := lab.DelayLines()
	if !ok {
		return nil, nil
	}
	return func(out *Outcome) { seeDelayLines(lab, before, out) }, nil
}

// shapeCluster gives a cluster platform's links the underlay's rate; other
// platforms have nothing to shape.
func shapeCluster(env *Env, c *plan.Cell) error {
	if cluster, ok := platform.ClusterOf(c.Driver().Driver.Caps); ok {
		if err := cluster.Shape(env.Platforms[c.Driver().Platform], c.Underlay); err != nil {
			return platformErr(err)
		}
	}
	return nil
}

// Seen keys of what the underlay's delay lines did during a trial.
const (
	SeenDelayLineCPU      = "underlay.delay_line.cpu_seconds"
	SeenDelayLineFrames   = "underlay.delay_line.frames"
	SeenDelayLineLost     = "underlay.delay_line.lost"
	SeenDelayLineOverflow = "underlay.delay_line.overflow"
	SeenDelayLineLate     = "underlay.delay_line.late_us"
)

// seeDelayLines records what the lab's delay lines did since before: the
// frames they delayed, lost on purpose and dropped when full, how late a
// held frame left them on average (their own error, apart from how late
// the machine then wakes the workload), and their threads' CPU time (the
// price of emulating delay in userspace).
func seeDelayLines(lab *netlab.Lab, before delayline.Stats, out *Outcome) {
	now, _ := lab.DelayLines()
	late := "0"
	if held := now.Held - before.Held; held > 0 {
		late = strconv.FormatFloat(float64(now.LateNs-before.LateNs)/float64(held)/1e3, 'f', 1, 64)
	}
	out.see("", map[string]string{
		SeenDelayLineLate:     late,
		SeenDelayLineCPU:      strconv.FormatFloat(now.CPU-before.CPU, 'f', 2, 64),
		SeenDelayLineFrames:   strconv.FormatUint(now.Frames-before.Frames, 10),
		SeenDelayLineLost:     strconv.FormatUint(now.Lost-before.Lost, 10),
		SeenDelayLineOverflow: strconv.FormatUint(now.Overflow-before.Overflow, 10),
	})
}

// startPairs starts the servers of every pair at once, each pair's in
// chain order, and returns the pairs once all are ready.
func (ct *chainTrial) startPairs(ctx context.Context) ([]*pair, error) {
	c := ct.c
	pairs := make([]*pair, c.Pairs)
	errs := make([]error, c.Pairs)
	var wg sync.WaitGroup
	for p := range pairs {
		pairs[p] = &pair{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = startServers(ctx, ct.env, ct.in, ct.t, p, pairs[p], func(role string) string { return ct.pairName(role, p) }, ct.agent)
		}()
	}
	wg.Wait()
	if err := firstPairErr(copiesOf(c), errs); err != nil {
		return nil, err
	}
	return pairs, nil
}

// startServers starts the servers of one pair in chain order, each ready
// before its client's address is worked out.
func startServers(ctx context.Context, env *Env, in *instances, t Trial, p int, pr *pair, name func(string) string, agent func(role string, pr *pair) invocation.Agent) error {
	c := t.Cell
	for i, srv := range c.Chain[:len(c.Chain)-1] {
		link := c.Links[i]
		bind, err := env.resolve(link.Bind, "")
		if err != nil {
			return fmt.Errorf("where the %s listens: %w", srv.Name, err)
		}
		inv := agent(srv.Name, pr)
		inv.Bind = bind
		var publish []vocab.Port
		if link.Target.Kind == plan.Published {
			inv.Port, publish = plan.PublishedPort, c.Publish
		}
		var ready *vocab.Probe
		if i == len(c.Chain)-2 { // the workload's own server, the driver's
			ready = c.Ready
		}
		s, err := in.startWith(ctx, c.Pinned(srv, p, i), name(srv.Name), inv, &pr.owner, platform.InstanceSpec{Publish: publish, Ready: ready})
		if err != nil {
			return err
		}
		pr.servers = append(pr.servers, s)
		addr, err := s.awaitReady(ctx)
		if err != nil {
			return err
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("%s announced a bad address %q: %w", srv.Name, addr, err)
		}
		pr.ports, pr.probe = nil, ""
		if link.Target.Kind == plan.Published {
			if link.Target.Host > 0 { // the lab publishes it on its emulated host
				pr.target, pr.ports, err = in.publishOnHost(srv, link.Target.Host, s.ip, port, c.Publish)
			} else {
				pr.target, pr.ports, err = published(s.inst, srv, port, c.Publish)
			}
			if err != nil {
				return err
			}
			if f, ok := s.inst.(platform.Fronted); ok {
				pr.probe = f.Probe() // the next role waits until its front carries a connection
			}
			continue
		}
		host, err := env.resolve(link.Target, s.ip)
		if err != nil {
			return fmt.Errorf("the %s's address on network %s: %w", srv.Name, srv.Network, err)
		}
		pr.target = net.JoinHostPort(host, port)
	}
	return nil
}

// published is where a client reaches a server whose ports its engine
// published: the machine's address and port the engine chose for the port
// the server announced, and where it published each of the server's more
// ports.
func published(inst platform.Instance, srv plan.Role, port string, more []vocab.Port) (string, map[string]string, error) {
	p, ok := inst.(platform.Publisher)
	if !ok || p.Published() == "" {
		return "", nil, fmt.Errorf("the %s's platform %s published no port for it on network %s", srv.Name, srv.Platform, srv.Network)
	}
	if port != strconv.Itoa(plan.PublishedPort) {
		return "", nil, fmt.Errorf("the %s listens on port %s, not on %d, the port its engine published", srv.Name, port, plan.PublishedPort)
	}
	ports, err := morePublished(p.PublishedPorts(), more)
	if err != nil {
		return "", nil, fmt.Errorf("the %s's platform %s %w", srv.Name, srv.Platform, err)
	}
	return p.Published(), ports, nil
}

// morePublished are where the server's more ports were published, of all
// that were ("PORT/PROTO" → "HOST:PORT"); nil when it has none more.
func morePublished(all map[string]string, more []vocab.Port) (map[string]string, error) {
	var ports map[string]string
	for _, m := range more {
		a, ok := all[m.String()]
		if !ok {
			return nil, fmt.Errorf("did not publish its port %s", m)
		}
		if ports == nil {
			ports = map[string]string{}
		}
		ports[m.String()] = a
	}
	return ports, nil
}

// publishOnHost publishes, on emulated host's underlay address, the port
// the server announced and its more ports (the lab's NAT, as Docker's
// -p), until the trial ends, and says where, as published does.
func (in *instances) publishOnHost(srv plan.Role, host int, ip, port string, more []vocab.Port) (string, map[string]string, error) {
	n, err := strconv.Atoi(port)
	if err != nil || ip == "" {
		return "", nil, fmt.Errorf("the %s announced port %q at address %q: nothing to publish", srv.Name, port, ip)
	}
	control := vocab.Port{Number: n, Proto: "tcp"}
	all, unpublish, err := in.env.Lab.Publish(host, ip, append([]vocab.Port{control}, more...))
	if err != nil {
		return "", nil, platformErr(err)
	}
	in.mu.Lock()
	in.detach = append(in.detach, unpublish)
	in.mu.Unlock()
	ports, err := morePublished(all, more)
	if err != nil {
		return "", nil, platformErr(fmt.Errorf("the lab %w", err))
	}
	return all[control.String()], ports, nil
}
