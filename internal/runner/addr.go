package runner

import (
	"fmt"

	"github.com/ctrbench/ctrbench/internal/plan"
)

// resolve turns a planned address into one to bind or dial; own is the
// server's own address (for plan.Own).
func (e *Env) resolve(a plan.Addr, own string) (string, error) {
	var s string
	switch a.Kind {
	case plan.Loopback:
		return "127.0.0.1", nil
	case plan.Any:
		return "0.0.0.0", nil
	case plan.Own:
		s = own
	case plan.HostSide:
		if a.Platform != "" {
			if p, ok := e.Platforms[a.Platform]; ok {
				s = p.HostAddr(a.Network)
			}
		} else if e.Lab != nil {
			s = e.Lab.HostAddr(a.Network, a.Host)
		}
	}
	if s == "" {
		return "", fmt.Errorf("no address for %s", a)
	}
	return s, nil
}
