package workload

import "fmt"

// Need is what a role needs of the image its instance runs from: a user's
// image (Ref or Archive), ctrbench's agent image with this machine's
// programs put in (Agent), or nothing but the agent, which every image
// ctrbench runs has (neither).
type Need struct {
	Ref, Archive string
	Agent        bool
}

// Any reports whether any image will do.
func (n Need) Any() bool { return n == Need{} }

func (n Need) String() string {
	switch {
	case n.Archive != "":
		return "the image in " + n.Archive
	case n.Ref != "":
		return "the image " + n.Ref
	case n.Agent:
		return "ctrbench's agent image with this machine's programs"
	}
	return "any image"
}

// NeedOf is what role of a workload with these parameters needs.
func (s *Spec) NeedOf(params map[string]string, role string) Need {
	if ref, archive := s.ImageOf(params, role); ref != "" || archive != "" {
		return Need{Ref: ref, Archive: archive}
	}
	portable := len(s.ToolsFor(params)) == 0
	if s.User.Portable != nil {
		portable = s.User.Portable(params, role)
	}
	return Need{Agent: !portable}
}

// Part is some roles of one workload that are to share an instance, with
// how a message names them ("the neighbour kv").
type Part struct {
	Spec   *Spec
	Params map[string]string
	Roles  []string // nil: all of the workload's
	Name   string
}

// Together is the image one instance running every part's roles runs
// from: the one image they all need, or an error naming two that differ.
func Together(parts ...Part) (Need, error) {
	var got Need
	var by string
	for _, p := range parts {
		roles := p.Roles
		if roles == nil {
			roles = p.Spec.RoleList()
		}
		for _, r := range roles {
			n := p.Spec.NeedOf(p.Params, r)
			if n.Any() {
				continue
			}
			who := p.Name
			if len(p.Spec.RoleList()) > 1 {
				who += "'s " + r
			}
			if !got.Any() && n != got {
				return Need{}, fmt.Errorf("%s runs from %s and %s from %s; an instance runs from one image", by, got, who, n)
			}
			got, by = n, who
		}
	}
	return got, nil
}
