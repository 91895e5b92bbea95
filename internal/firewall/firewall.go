// Package firewall lets traffic between the ports of a bridge ctrbench
// made pass the machine's iptables FORWARD chain, and takes that back.
//
// Where br_netfilter is loaded (Docker loads it) and
// net.bridge.bridge-nf-call-iptables is 1, frames bridged between two ports
// of a Linux bridge in the machine's namespace traverse iptables' FORWARD
// chain, whose policy Docker sets to DROP: two containers on such a bridge
// cannot talk. Docker inserts, for each of its bridges, a rule accepting
// what enters and leaves the same bridge; ctrbench does the same for its
// own (LXC's bridge), so both pay the same per-packet filtering and are
// measured alike. Every rule names a link called ctb…, so `ctrbench clean`
// finds the ones a killed run left.
//
// It runs the iptables tool (-w: wait for the xtables lock), the one
// interface iptables has; the package is its only caller.
package firewall

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// rule is the accept rule of bridge br, as iptables' arguments after the
// chain: what enters from br and leaves by any bridge of ctrbench's — its
// own ports, and the campaign's other bridges (a client in a VM or an
// LXC container reaching a server on the campaign's Docker or podman
// bridge, whose engines' rules let in only answers from outside).
func rule(br string) []string {
	return []string{"-i", br, "-o", vocab.LinkPrefix + "+", "-j", "ACCEPT", "-m", "comment", "--comment", "ctrbench"}
}

// Available reports whether the iptables tool is installed; without it no
// rule can be in the way either, unless another tool (nft) made one.
func Available() bool {
	_, err := exec.LookPath("iptables")
	return err == nil
}

// AllowBridge inserts, first in FORWARD, the rule accepting traffic from
// bridge br to its own ports and to ctrbench's other bridges; present
// already, it is not added again.
func AllowBridge(br string) error {
	if !strings.HasPrefix(br, vocab.LinkPrefix) {
		return fmt.Errorf("bridge %s: ctrbench's links are named %s…", br, vocab.LinkPrefix)
	}
	if run(append([]string{"-C", "FORWARD"}, rule(br)...)...) == nil {
		return nil
	}
	if err := run(append([]string{"-I", "FORWARD", "1"}, rule(br)...)...); err != nil {
		return fmt.Errorf("letting bridge %s forward between its ports: %w", br, err)
	}
	return nil
}

// RemoveBridge deletes bridge br's rules; none is no error.
func RemoveBridge(br string) error {
	for run(append([]string{"-D", "FORWARD"}, rule(br)...)...) == nil {
	}
	return nil
}

// Clean deletes every FORWARD rule that names a ctb… link and returns
// what it removed, as iptables -S prints it. match, when non-nil, narrows
// it to links it accepts.
func Clean(match func(link string) bool) ([]string, error) {
	if !Available() {
		return nil, nil
	}
	out, err := exec.Command("iptables", "-w", "-S", "FORWARD").Output()
	if err != nil {
		return nil, fmt.Errorf("listing iptables FORWARD: %w", err)
	}
	var removed []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		link, ok := Names(line)
		if !ok || (match != nil && !match(link)) {
			continue
		}
		args := strings.Fields(strings.Replace(line, "-A FORWARD", "-D FORWARD", 1))
		if len(args) < 2 || args[0] != "-D" {
			continue
		}
		// The comment is quoted by -S only when it has spaces; ours has none.
		if err := run(args...); err == nil {
			removed = append(removed, line)
		}
	}
	return removed, nil
}

// cniChains are where CNI's firewall plugin isolates bridge networks from
// each other (podman's networks, with Docker's isolation): a rule per
// bridge that podman does not remove with the network.
var cniChains = []string{"CNI-ISOLATION-STAGE-1", "CNI-ISOLATION-STAGE-2"}

// CleanCNI deletes the rules of CNI's isolation chains that name a ctb…
// link (match, when non-nil, narrows it to links it accepts) and returns
// what it removed, as iptables -S prints it. Chains that do not exist
// hold nothing.
func CleanCNI(match func(link string) bool) ([]string, error) {
	if !Available() {
		return nil, nil
	}
	var removed []string
	var errs []error
	for _, chain := range cniChains {
		out, err := exec.Command("iptables", "-w", "-S", chain).Output()
		if err != nil {
			continue // no such chain: CNI never ran here
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		// Line i of -S is rule i (line 0 declares the chain); delete from
		// the last so the numbers of the others stay.
		for i := len(lines) - 1; i >= 1; i-- {
			link, ok := namesLink(lines[i])
			if !ok || (match != nil && !match(link)) {
				continue
			}
			if err := run("-D", chain, strconv.Itoa(i)); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, lines[i])
		}
	}
	return removed, errors.Join(errs...)
}

// namesLink returns the ctb… link a rule's -i or -o names.
func namesLink(line string) (string, bool) { return linkAfter(strings.Fields(line), "-i", "-o") }

// linkAfter returns the first ctb… link that follows one of flags in the
// fields of an iptables rule.
func linkAfter(f []string, flags ...string) (string, bool) {
	for i := 0; i+1 < len(f); i++ {
		if slices.Contains(flags, f[i]) && strings.HasPrefix(f[i+1], vocab.LinkPrefix) {
			return f[i+1], true
		}
	}
	return "", false
}

// Names returns the ctb… link an iptables -S FORWARD line's -i names, if
// it is one of ctrbench's rules.
func Names(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "-A" || f[1] != "FORWARD" || !strings.Contains(line, "--comment ctrbench") {
		return "", false
	}
	return linkAfter(f, "-i")
}

// run runs iptables in the machine's namespace.
func run(args ...string) error { return runIn("", args...) }

// directComment marks the raw-table rule that lets ctrbench's links reach
// the containers on bridge br directly.
func directComment(br string) string { return "ctrbench:" + br }

// directRule is AllowDirect's rule, as iptables' arguments after the
// chain.
func directRule(br, subnet string) []string {
	return []string{"-i", vocab.LinkPrefix + "+", "-d", subnet, "-j", "ACCEPT", "-m", "comment", "--comment", directComment(br)}
}

// AllowDirect lets what enters from a link of ctrbench's (another bridge
// of the campaign: LXC's, the VMs', a lab's) reach subnet, the network of
// ctrbench's engine bridge br, by its containers' own addresses. Docker 28
// drops such packets in the raw table's PREROUTING before routing (a rule
// per container: `-d <its address> ! -i <its bridge> -j DROP`, what it
// calls direct routing to unpublished ports); this rule, first in the
// chain, is the one exception, and only for ctrbench's links into
// ctrbench's network: nothing else the engine filters is let through.
func AllowDirect(br, subnet string) error {
	if !strings.HasPrefix(br, vocab.LinkPrefix) {
		return fmt.Errorf("bridge %s: ctrbench's links are named %s…", br, vocab.LinkPrefix)
	}
	if run(append([]string{"-t", "raw", "-C", "PREROUTING"}, directRule(br, subnet)...)...) == nil {
		return nil
	}
	if err := run(append([]string{"-t", "raw", "-I", "PREROUTING", "1"}, directRule(br, subnet)...)...); err != nil {
		return fmt.Errorf("letting ctrbench's links reach %s directly: %w", subnet, err)
	}
	return nil
}

// RemoveDirect deletes AllowDirect's rules for bridge br; none is no
// error.
func RemoveDirect(br string) error {
	_, err := CleanDirect(func(link string) bool { return link == br })
	return err
}

// CleanDirect deletes AllowDirect's rules (match, when non-nil, narrows
// it to those of the bridges it accepts) and returns what it removed, as
// iptables -S prints it.
func CleanDirect(match func(link string) bool) ([]string, error) {
	if !Available() {
		return nil, nil
	}
	out, err := exec.Command("iptables", "-w", "-t", "raw", "-S", "PREROUTING").Output()
	if err != nil {
		return nil, fmt.Errorf("listing iptables raw PREROUTING: %w", err)
	}
	var removed []string
	var errs []error
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		i := slices.Index(f, "--comment")
		if len(f) < 2 || f[0] != "-A" || i < 0 || i+1 >= len(f) {
			continue
		}
		// -S quotes a comment with a colon in it.
		f[i+1] = strings.Trim(f[i+1], `"`)
		br, ok := strings.CutPrefix(f[i+1], "ctrbench:")
		if !ok || (match != nil && !match(br)) {
			continue
		}
		f[0] = "-D"
		if err := run(append([]string{"-t", "raw"}, f...)...); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "-t raw "+line)
	}
	return removed, errors.Join(errs...)
}

// OpenInner lets what the namespace at nsPath (a nested parent's) routes
// to subnet, the bridge of the engine inside it, reach that engine's
// containers: Docker 28 drops packets addressed to a container that do
// not come in through its bridge (raw PREROUTING) and, in its DOCKER
// chain, those to ports it did not publish. One accept first in raw
// PREROUTING and one in DOCKER-USER (the chain Docker keeps for rules of
// its users, evaluated before its own) undo that for subnet alone, inside
// that namespace, which goes with the parent.
func OpenInner(nsPath, subnet string) error {
	rules := [][]string{
		{"-t", "raw", "-I", "PREROUTING", "1", "-d", subnet, "-j", "ACCEPT", "-m", "comment", "--comment", "ctrbench"},
		{"-I", "DOCKER-USER", "1", "-d", subnet, "-j", "ACCEPT", "-m", "comment", "--comment", "ctrbench"},
	}
	for _, r := range rules {
		if err := runIn(nsPath, r...); err != nil {
			return fmt.Errorf("opening the inner engine's bridge %s: %w", subnet, err)
		}
	}
	return nil
}
