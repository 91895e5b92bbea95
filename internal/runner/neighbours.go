package runner

import (
	"context"
	"fmt"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/neighbour"
	"github.com/ctrbench/ctrbench/internal/plan"
	"github.com/ctrbench/ctrbench/internal/result"
)

// startNeighbours starts each neighbour of a separate-packaging cell in an
// instance of its own and returns once each is under way, so the target
// never starts alone.
func startNeighbours(ctx context.Context, in *instances, c *plan.Cell, nameOf func(role string) string) ([]*watched, error) {
	var loops []*watched
	for i, nb := range c.Neighbours.Specs {
		typ, params := neighbour.Parse(nb)
		var none string
		role := c.Neighbours.Role
		if i < len(c.Neighbours.Images) {
			role.Image = c.Neighbours.Images[i]
		}
		r, err := in.start(ctx, role, nameOf(fmt.Sprintf("neighbour%d", i+1)),
			invocation.Agent{Kind: invocation.Loop, Workload: typ, Params: params}, &none)
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

// stopNeighbours ends neighbours that ran in their own instances and adds
// what they did to the target's result.
func stopNeighbours(ctx context.Context, loops []*watched, target *result.Result) error {
	sctx, cancel := context.WithTimeout(ctx, serverGrace)
	defer cancel()
	for _, r := range loops {
		if err := r.inst.Stop(sctx); err != nil {
			return fmt.Errorf("stopping a neighbour: %w", err)
		}
	}
	for _, r := range loops {
		res, err := r.await(sctx)
		if err != nil {
			return fmt.Errorf("neighbour: %w", err)
		}
		if res.Status != result.OK {
			return fmt.Errorf("neighbour %s: %s", res.Workload, res.Error)
		}
		target.Neighbours = append(target.Neighbours, res.Neighbours...)
	}
	return neighbour.Attach(target, target.Started, target.Ended)
}
