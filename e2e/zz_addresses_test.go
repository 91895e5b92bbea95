package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/subnets"
)

// Every address ctrbench configures comes from its subnet pool (by
// default 198.18.0.0/15). Two checks hold it, neither relying on what
// ctrbench says it did:
//
//   - every campaign a test runs to the end (runStored): every IPv4
//     address in its records — what each agent saw of its interfaces,
//     the environment — is in the pool or is one of the user's engine's
//     own (engineOwn);
//   - the whole run: a netlink monitor started before the first test
//     (ip monitor all-nsid address: the machine's namespace and every
//     namespace linked to it — containers, emulated hosts, parents) lists
//     every address any link was given while the tests ran, and the last
//     test checks each.

// ipv4 finds IPv4 addresses (with a prefix length or not) in text.
var ipv4 = regexp.MustCompile(`\b(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(?:/\d{1,2})?\b`)

// engineOwn are the ranges that are not ctrbench's to configure: the
// user's engine's default bridge (a bridge-default cell's containers are
// there), the addresses of the machine's own links (an agent on the host
// network sees the machine's interfaces), and the addresses that are
// nobody's network (loopback, unspecified, link-local, multicast and
// broadcast).
func engineOwn(t *testing.T) []netip.Prefix {
	t.Helper()
	own := []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("0.0.0.0/32"),
		netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("224.0.0.0/3"),
	}
	out, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	for _, l := range strings.Split(string(out), "\n") {
		// "2: eth0    inet 192.0.2.2/24 brd … scope global eth0"
		f := strings.Fields(l)
		if len(f) < 4 || f[2] != "inet" || strings.HasPrefix(f[1], "ctb") {
			continue
		}
		if p, err := netip.ParsePrefix(f[3]); err == nil {
			own = append(own, netip.PrefixFrom(p.Addr(), 32))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if sub, err := engine.DefaultSubnet(ctx); err == nil {
		own = append(own, sub)
	}
	return own
}

// outsidePool lists the addresses of text that are neither in the pool
// nor the engine's own.
func outsidePool(text string, pool subnets.Pool, own []netip.Prefix) []string {
	var out []string
	for _, m := range ipv4.FindAllStringSubmatch(text, -1) {
		a, err := netip.ParseAddr(m[1])
		if err != nil || pool.Contains(a) {
			continue
		}
		mine := false
		for _, p := range own {
			mine = mine || p.Contains(a)
		}
		if !mine {
			out = append(out, m[0])
		}
	}
	return out
}

// assertAddressesInPool checks a stored campaign's records.
func assertAddressesInPool(t *testing.T, db, id string) {
	t.Helper()
	c := storedCampaign(t, db, id)
	trials := storedTrials(t, db, id)
	pool := subnets.Default()
	if p, err := subnets.Parse(c.Env["subnet_pool"]); err == nil {
		pool = p
	} else if c.Env["subnet_pool"] != "" {
		t.Errorf("campaign %s recorded subnet pool %q: %v", id, c.Env["subnet_pool"], err)
	}
	own := engineOwn(t)
	var bad []string
	for k, v := range c.Env {
		if k == result.EnvCmdline {
			continue // the kernel's boot parameters (ip=…): the machine's, not configured by ctrbench
		}
		for _, a := range outsidePool(v, pool, own) {
			bad = append(bad, fmt.Sprintf("env %s: %s", k, a))
		}
	}
	for _, tr := range trials {
		for k, v := range tr.Seen {
			for _, a := range outsidePool(v, pool, own) {
				bad = append(bad, fmt.Sprintf("trial %d %s: %s (%s)", tr.Seq, k, a, v))
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("campaign %s recorded addresses outside its subnet pool %s:\n  %s", id, pool, strings.Join(bad, "\n  "))
	}
}

// addressMonitor is the netlink monitor of the whole run.
var addressMonitor struct {
	sync.Mutex
	cmd  *exec.Cmd
	file string
	err  error
}

// startAddressMonitor starts `ip -o monitor all-nsid address` into a
// file, before any test runs.
func startAddressMonitor() {
	f, err := os.CreateTemp("", "ctrbench-addresses-*.log")
	if err != nil {
		addressMonitor.err = err
		return
	}
	cmd := exec.Command("ip", "-o", "monitor", "all-nsid", "address")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		addressMonitor.err = err
		f.Close()
		return
	}
	f.Close()
	addressMonitor.cmd, addressMonitor.file = cmd, f.Name()
}

// stopAddressMonitor ends the monitor and removes its file.
func stopAddressMonitor() {
	if addressMonitor.cmd != nil {
		_ = addressMonitor.cmd.Process.Kill()
		_ = addressMonitor.cmd.Wait()
		_ = os.Remove(addressMonitor.file)
	}
}

// monitorLine is an address the monitor saw added: "[nsid 3]12: ctb0
// inet 198.18.1.2/24 …".
var monitorLine = regexp.MustCompile(`^\[nsid ([^\]]+)\](\d+): (\S+)\s+inet (\S+)`)

// TestZZAddressesInPool runs last (its file sorts last): every IPv4
// address a link of the machine, or of a namespace linked to it, was
// given while the suite ran is in the subnet pool, or is the user's
// engine's own.
func TestZZAddressesInPool(t *testing.T) {
	if addressMonitor.err != nil {
		t.Fatalf("the address monitor did not start: %v", addressMonitor.err)
	}
	if addressMonitor.file == "" {
		t.Skip("no address monitor (ip is not installed)")
	}
	time.Sleep(500 * time.Millisecond) // what is still on its way
	f, err := os.Open(addressMonitor.file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pool, own := subnets.Default(), engineOwn(t)
	seen, bad := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := monitorLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		seen[m[4]] = true
		for _, a := range outsidePool(m[4], pool, own) {
			bad[fmt.Sprintf("%s on %s (namespace %s)", a, m[3], m[1])] = true
		}
	}
	if len(seen) == 0 {
		t.Skip("no address was configured while the tests ran (no test ran that makes one)")
	}
	var list []string
	for b := range bad {
		list = append(list, b)
	}
	sort.Strings(list)
	if len(list) > 0 {
		t.Errorf("%d of the %d addresses configured while the tests ran are outside the subnet pool %s (and not the engine's own %v):\n  %s", len(list), len(seen), pool, own, strings.Join(list, "\n  "))
	}
	t.Logf("%d addresses configured while the tests ran, every one in %s or the engine's own %v", len(seen), pool, own)
}
