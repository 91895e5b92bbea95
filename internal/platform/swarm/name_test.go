package swarm

import (
	"strings"
	"testing"
)

// A service or network name the swarm would refuse (over 63 bytes) is
// shortened to one it takes, still unique and ending in the trial and role.
func TestSwarmName(t *testing.T) {
	short := "ctrbench-e2e-swarm-t1-client-8465"
	if got := swarmName(short); got != short {
		t.Errorf("a short name changed: %q", got)
	}
	a := swarmName("ctrbench-e2e-swarm-remote-kill-20261124-155933-ef56-t1-client-8465")
	b := swarmName("ctrbench-e2e-swarm-remote-kill-20261124-155933-ef57-t1-client-8465")
	for _, n := range []string{a, b} {
		if len(n) > maxName || !strings.HasPrefix(n, "ctb-") || !strings.HasSuffix(n, "-t1-client-8465") {
			t.Errorf("shortened %q (%d bytes)", n, len(n))
		}
	}
	if a == b {
		t.Errorf("two names shortened alike: %q", a)
	}
}
