package spec

import (
	"fmt"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// NeighbourImages says which image each instance of a cell's neighbours
// runs from. With packaging same-container the neighbours run in the
// target's measuring role's instance: host is the one image that role and
// every role of every neighbour can share (a user's image when one of them
// needs it, so "my API's client beside my database" runs in the
// database's image). With separate-containers each neighbour has an
// instance of its own, which all its roles share: each[i]. An error says
// which two need different images.
func (e *Experiment) NeighbourImages(c result.Cell) (host workload.Need, each []workload.Need, err error) {
	var parts []workload.Part
	for _, name := range vocab.NeighboursOf(c.Factors[vocab.FNeighbour]) {
		w, ok := e.Workload(name)
		if !ok {
			continue
		}
		ws, ok := workload.Lookup(w.Type)
		if !ok {
			continue
		}
		parts = append(parts, workload.Part{Spec: ws, Params: w.Params, Name: "the neighbour " + name})
	}
	if len(parts) == 0 {
		return host, nil, nil
	}
	if vocab.Apart(c.Factors[vocab.FPackaging]) {
		for _, p := range parts {
			n, err := workload.Together(p)
			if err != nil {
				return host, nil, fmt.Errorf("%s cannot run in an instance of its own: %w", p.Name, err)
			}
			each = append(each, n)
		}
		return host, each, nil
	}
	ws, ok := workload.Lookup(c.WorkloadType)
	if !ok {
		return host, nil, nil
	}
	roles := ws.RoleList()
	driver := roles[len(roles)-1]
	target := workload.Part{Spec: ws, Params: c.Params, Roles: []string{driver}, Name: "the target " + c.Workload}
	if host, err = workload.Together(append([]workload.Part{target}, parts...)...); err != nil {
		where := "the target's instance"
		if len(roles) > 1 {
			where = "the instance of the target's " + driver
		}
		return host, nil, fmt.Errorf("packaging %s runs the neighbours in %s: %w; use packaging %s, or run them from one image",
			vocab.PackSame, where, err, vocab.PackSeparate)
	}
	return host, nil, nil
}
