package firewall

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Docker's NAT, written by ctrbench inside a network namespace it made (an
// emulated host's), never the machine's: what leaves a bridge's subnet for
// elsewhere takes the leaving interface's address (MASQUERADE, Docker's
// rule for each of its bridges), and a port published on the host's
// address is rewritten to a container's (DNAT, docker run -p's rule, for
// packets arriving and for the host's own). The rules go with the
// namespace; Unpublish takes a port's back sooner.

// Masquerade adds, in the namespace at nsPath, the rule rewriting the
// source of what leaves subnet ("198.18.151.0/24") by any link but its
// bridge br.
func Masquerade(nsPath, subnet, br string) error {
	if !strings.HasPrefix(br, vocab.LinkPrefix) {
		return fmt.Errorf("bridge %s: ctrbench's links are named %s…", br, vocab.LinkPrefix)
	}
	return runIn(nsPath, "-t", "nat", "-A", "POSTROUTING", "-s", subnet, "!", "-o", br, "-j", "MASQUERADE")
}

// dnat is iptables' op ("-A", "-D") of the rule in chain sending what is
// addressed to hostIP:hostPort (proto) to to ("IP:PORT").
func dnat(op, chain, hostIP string, hostPort int, proto, to string) []string {
	return []string{"-t", "nat", op, chain, "-d", hostIP + "/32", "-p", proto, "-m", proto, "--dport", strconv.Itoa(hostPort), "-j", "DNAT", "--to-destination", to}
}

// Publish adds, in the namespace at nsPath, the rules sending what is
// addressed to hostIP:hostPort (proto "tcp" or "udp") to to: arriving
// (PREROUTING) and sent by the namespace's own processes (OUTPUT), as
// Docker does for a published port.
func Publish(nsPath, hostIP string, hostPort int, proto, to string) error {
	for _, chain := range []string{"PREROUTING", "OUTPUT"} {
		if err := runIn(nsPath, dnat("-A", chain, hostIP, hostPort, proto, to)...); err != nil {
			return err
		}
	}
	return nil
}

// Unpublish deletes what Publish added; rules already gone (the namespace
// too) are no error.
func Unpublish(nsPath, hostIP string, hostPort int, proto, to string) error {
	for _, chain := range []string{"PREROUTING", "OUTPUT"} {
		_ = runIn(nsPath, dnat("-D", chain, hostIP, hostPort, proto, to)...)
	}
	return nil
}

// runIn runs iptables inside the namespace at nsPath ("": the machine's).
func runIn(nsPath string, args ...string) error {
	cmd := exec.Command("iptables", append([]string{"-w"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	what := "iptables " + strings.Join(args, " ")
	start := cmd.Start
	if nsPath != "" {
		what += " in " + nsPath
		start = func() error { return netns.Start(nsPath, cmd) }
	}
	if err := start(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", what, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
