package runner

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/result"
)

// startNeighbours starts each neighbour of a separate-packaging cell in an
// instance of its own — a client/server neighbour in two, its server's
// first — and returns once each is under way, so the target never starts
// alone.
func startNeighbours(ctx context.Context, env *Env, in *instances, c *plan.Cell, nameOf func(role string) string) ([]*watched, error) {
	var loops []*watched
	for i, nb := range c.Neighbours.Specs {
		typ, params := neighbour.Parse(nb)
		role := c.Neighbours.Role
		if i < len(c.Neighbours.Images) {
			role.Image = c.Neighbours.Images[i]
		}
		name := fmt.Sprintf("neighbour%d", i+1)
		loop := invocation.Agent{Kind: invocation.Loop, Workload: typ, Params: params}
		if i < len(c.Neighbours.Ends) && c.Neighbours.Ends[i] != nil {
			// Its server first, then its client (below) against it.
			loop.Role = c.Neighbours.Ends[i][0]
			srv, err := startEnd(ctx, env, in, c.Neighbours.Link, role, nameOf(name+"-"+loop.Role), loop)
			if err != nil {
				return nil, fmt.Errorf("neighbour %s: %w", typ, err)
			}
			loops = append(loops, srv.watched)
			loop.Role, loop.Target = c.Neighbours.Ends[i][1], srv.target
			name += "-" + loop.Role
		}
		var none string
		r, err := in.start(ctx, role, nameOf(name), loop, &none)
		if err != nil {
			return nil, err
		}
		if _, err := r.awaitReady(ctx); err != nil {
			return nil, fmt.Errorf("neighbour %s: %w", typ, err)
		}
		loops = append(loops, r.watched)
	}
	return loops, nil
}

// neighbourServer is the server end of a client/server neighbour, and
// where its client reaches it.
type neighbourServer struct {
	*started
	target string
}

// startEnd starts the server end of a client/server neighbour on the
// port every iteration listens on, and returns once it listens.
func startEnd(ctx context.Context, env *Env, in *instances, link plan.Link, role plan.Role, name string, loop invocation.Agent) (neighbourServer, error) {
	bind, err := env.resolve(link.Bind, "")
	if err != nil {
		return neighbourServer{}, fmt.Errorf("where its server listens: %w", err)
	}
	loop.Bind, loop.Port = bind, plan.PublishedPort
	var none string
	s, err := in.start(ctx, role, name, loop, &none)
	if err != nil {
		return neighbourServer{}, err
	}
	if _, err := s.awaitReady(ctx); err != nil {
		return neighbourServer{}, err
	}
	host, err := env.resolve(link.Target, s.ip)
	if err != nil {
		return neighbourServer{}, fmt.Errorf("its server's address: %w", err)
	}
	return neighbourServer{started: s, target: net.JoinHostPort(host, strconv.Itoa(plan.PublishedPort))}, nil
}

// stopNeighbours ends neighbours that ran in their own instances and adds
// what they did to the target's result.
func stopNeighbours(ctx context.Context, loops []*watched, target *result.Result) error {
	sctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	// Last first, each ended before the one before it is stopped: a
	// client end (after its server in loops) is stopped while its server
	// still listens, so the iteration the stop cuts short counts as run,
	// not as the broken pipe its server's end would give it.
	done := make([]*result.Result, len(loops))
	for i := len(loops) - 1; i >= 0; i-- {
		if err := loops[i].inst.Stop(sctx); err != nil {
			return fmt.Errorf("stopping a neighbour: %w", err)
		}
		res, err := loops[i].await(sctx)
		if err != nil {
			return fmt.Errorf("neighbour: %w", err)
		}
		if res.Status != result.OK {
			return fmt.Errorf("neighbour %s: %s", res.Workload, res.Error)
		}
		done[i] = res
	}
	for _, res := range done {
		target.Neighbours = append(target.Neighbours, res.Neighbours...)
	}
	return neighbour.Attach(target, target.Started, target.Ended)
}
