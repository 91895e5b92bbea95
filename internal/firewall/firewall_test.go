package firewall

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for line, want := range map[string]string{
		"-A FORWARD -i ctbl1a2b3c -o ctbl1a2b3c -m comment --comment ctrbench -j ACCEPT": "ctbl1a2b3c",
		"-A FORWARD -i ctbl1a2b3c -o ctb+ -m comment --comment ctrbench -j ACCEPT":       "ctbl1a2b3c",
		"-A FORWARD -i docker0 -o docker0 -j ACCEPT":                                     "",
		"-A FORWARD -i ctbx -o ctbx -j ACCEPT":                                           "", // not ours: no comment
		"-P FORWARD DROP":                                                                "",
	} {
		got, ok := Names(line)
		if got != want || ok != (want != "") {
			t.Errorf("Names(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
	if err := AllowBridge("docker0"); err == nil {
		t.Error("a rule for a link that is not ctrbench's was accepted")
	}
}

// TestRuleLifecycle inserts, finds and removes a real rule in the
// machine's FORWARD chain (for a link name that does not exist: iptables
// does not care), then checks Clean removes a leftover one.
func TestRuleLifecycle(t *testing.T) {
	if testing.Short() || os.Getuid() != 0 || !Available() {
		t.Skip("needs root and iptables")
	}
	const br = "ctbzfwtest"
	rules := func() string {
		out, err := exec.Command("iptables", "-w", "-S", "FORWARD").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = RemoveBridge(br) })
	for i := 0; i < 2; i++ { // the second is a no-op
		if err := AllowBridge(br); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(rules(), "-i "+br+" "); n != 1 {
		t.Fatalf("%d rules for %s, want 1:\n%s", n, br, rules())
	}
	if err := RemoveBridge(br); err != nil || strings.Contains(rules(), br) {
		t.Fatalf("remove: %v\n%s", err, rules())
	}
	if err := AllowBridge(br); err != nil {
		t.Fatal(err)
	}
	got, err := Clean(func(link string) bool { return link == br })
	if err != nil || len(got) != 1 || strings.Contains(rules(), br) {
		t.Fatalf("clean: %v %v\n%s", got, err, rules())
	}
}

// The CNI isolation rules ctrbench removes are those naming a ctb… link,
// in or out; the chain's own jumps are not.
func TestNamesLink(t *testing.T) {
	for line, want := range map[string]string{
		`-A CNI-ISOLATION-STAGE-1 -i ctb4042e25c ! -o ctb4042e25c -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j CNI-ISOLATION-STAGE-2`: "ctb4042e25c",
		`-A CNI-ISOLATION-STAGE-2 -o ctb6edb5936 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j DROP`:                                   "ctb6edb5936",
		`-A CNI-ISOLATION-STAGE-2 -o cni-podman0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j DROP`:                                   "",
		`-A CNI-ISOLATION-STAGE-1 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j RETURN`:                                                "",
	} {
		got, ok := namesLink(line)
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", line, got, ok, want)
		}
	}
}

// TestDirectLifecycle inserts AllowDirect's rule first in raw PREROUTING,
// once however often it is asked, and removes it by its bridge; Clean
// removes a leftover. Nothing else in the chain is touched.
func TestDirectLifecycle(t *testing.T) {
	if testing.Short() || os.Getuid() != 0 || !Available() {
		t.Skip("needs root and iptables")
	}
	const br, subnet = "ctbzdirtest", "198.19.190.0/24"
	rules := func() []string {
		out, err := exec.Command("iptables", "-w", "-t", "raw", "-S", "PREROUTING").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	before := rules()
	t.Cleanup(func() { _ = RemoveDirect(br) })
	for i := 0; i < 2; i++ {
		if err := AllowDirect(br, subnet); err != nil {
			t.Fatal(err)
		}
	}
	after := rules()
	if len(after) != len(before)+1 || !strings.Contains(after[1], "-d "+subnet) || !strings.Contains(after[1], "-i ctb+") || !strings.Contains(after[1], "ctrbench:"+br) {
		t.Fatalf("want one rule first in the chain, got:\n%s", strings.Join(after, "\n"))
	}
	if err := AllowDirect("docker0", subnet); err == nil {
		t.Error("a rule for a bridge that is not ctrbench's was accepted")
	}
	if err := RemoveDirect(br); err != nil || len(rules()) != len(before) {
		t.Fatalf("remove: %v\n%s", err, strings.Join(rules(), "\n"))
	}
	if err := AllowDirect(br, subnet); err != nil {
		t.Fatal(err)
	}
	got, err := CleanDirect(func(link string) bool { return link == br })
	if err != nil || len(got) != 1 || len(rules()) != len(before) {
		t.Fatalf("clean: %v %v\n%s", got, err, strings.Join(rules(), "\n"))
	}
}
