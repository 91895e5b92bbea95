package netlab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/vocab"

	"github.com/vishvananda/netlink"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("builds network topologies: needs root")
	}
}

// logWriter turns Progress lines into test log lines.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// newLab builds a lab with a fresh token; when the test ends it closes it
// (twice: Close is idempotent), checks nothing of it is left, and that Open
// vSwitch is stopped again if it was not running before.
func newLab(t *testing.T, cfg Config) *Lab {
	t.Helper()
	needRoot(t)
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Token = tok
	cfg.Progress = logWriter{t}
	ovsBefore := ovsRunning(context.Background())
	start := time.Now()
	lab, err := New(context.Background(), cfg)
	if err != nil {
		assertGone(t, tok)
		t.Fatal(err)
	}
	t.Logf("lab %s built in %v; info %v", tok, time.Since(start).Round(time.Millisecond), lab.Info())
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := lab.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		assertGone(t, tok)
		if !ovsBefore && ovsRunning(context.Background()) {
			t.Errorf("Open vSwitch still runs after Close, but was not running before")
		}
	})
	return lab
}

// assertGone checks that nothing named ctb<tok>* is left: root-namespace
// links, namespaces, OVS bridges.
func assertGone(t *testing.T, tok string) {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatalf("ip -o link: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ": ctb"+tok) {
			t.Errorf("link left behind: %s", line)
		}
	}
	if left, err := netns.List("ctb" + tok); err != nil || len(left) > 0 {
		t.Errorf("namespaces left behind: %v (%v)", left, err)
	}
	if ovsRunning(context.Background()) {
		brs, err := ovsListBridges(context.Background())
		if err != nil {
			t.Error(err)
		}
		for _, br := range brs {
			if strings.HasPrefix(br, "ctb"+tok) {
				t.Errorf("OVS bridge left behind: %s", br)
			}
		}
	}
}

// container creates an empty namespace standing in for a container
// started with --network none.
func container(t *testing.T, lab *Lab, i int) string {
	t.Helper()
	name := fmt.Sprintf("ctb%sc%d", lab.tok, i)
	path, err := netns.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil {
			t.Errorf("deleting %s: %v", name, err)
		}
	})
	return path
}

func attach(t *testing.T, lab *Lab, mode vocab.Network, host int, ns, wantIP string, wantMTU int) Attachment {
	t.Helper()
	a, err := lab.Attach(context.Background(), mode, host, ns)
	if err != nil {
		t.Fatal(err)
	}
	if a.IP != wantIP || a.Iface != "ctb0" || a.MTU != wantMTU {
		t.Errorf("Attach(%s, %d) = %+v, want IP %s on ctb0, MTU %d", mode, host, a, wantIP, wantMTU)
	}
	t.Cleanup(func() {
		if err := a.Detach(); err != nil {
			t.Errorf("Detach: %v", err)
		}
	})
	return a
}

// inNS runs fn in the namespace at path, or directly for "" (the root
// namespace).
func inNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	return netns.Do(path, fn)
}

// echo proves a TCP path: an echo server bound to serverIP in serverNS,
// and a client in clientNS that sends 256 KiB (more than any MTU or
// window, so a broken MTU shows) and reads them back.
func echo(t *testing.T, serverNS, serverIP, clientNS string) {
	t.Helper()
	c, where, done := echoConn(t, serverNS, serverIP, clientNS)
	defer done()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := bytes.Repeat([]byte("ctrbench"), 32<<10)
	go func() { _, _ = c.Write(msg) }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("%s: echo: %v", where, err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("%s: echo differs", where)
	}
}

// echoConn starts an echo server for one connection, bound to serverIP in
// serverNS, and returns a client's connection to it from clientNS, "client
// -> server" for messages, and done, which closes both ends.
func echoConn(t *testing.T, serverNS, serverIP, clientNS string) (c net.Conn, where string, done func()) {
	t.Helper()
	var ln net.Listener
	if err := inNS(serverNS, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(serverIP, "0"))
		return err
	}); err != nil {
		t.Fatalf("listening on %s: %v", serverIP, err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	where = nsLabel(clientNS) + " -> " + ln.Addr().String()
	if err := inNS(clientNS, func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		ln.Close()
		t.Fatalf("%s: %v", where, err)
	}
	return c, where, func() { c.Close(); ln.Close() }
}

func nsLabel(path string) string {
	if path == "" {
		return "root namespace"
	}
	return path
}

// acrossHosts attaches a container on each of two hosts to mode at the
// addresses third.2 of 198.18.<third1> and 198.18.<third2>, checks host
// 2's address on it, and that each reaches what it should: the other
// container across hosts, its host, the other host, and back.
func acrossHosts(t *testing.T, lab *Lab, mode vocab.Network, third1, third2 int) (c1 string, a1, a2 Attachment) {
	t.Helper()
	c1, c2 := container(t, lab, 1), container(t, lab, 2)
	a1 = attach(t, lab, mode, 1, c1, ip4(198, 18, third1, 2), 1500)
	a2 = attach(t, lab, mode, 2, c2, ip4(198, 18, third2, 2), 1500)
	if got := lab.HostAddr(mode, 2); got != ip4(198, 18, third2, 1) {
		t.Errorf("HostAddr(%s, 2) = %q", mode, got)
	}
	echo(t, c2, a2.IP, c1)                            // container to container across hosts
	echo(t, c1, a1.IP, lab.HostNS(1))                 // host to its own container
	echo(t, c1, a1.IP, lab.HostNS(2))                 // host to a container on another host
	echo(t, lab.HostNS(2), lab.HostAddr(mode, 2), c1) // container to another host
	return c1, a1, a2
}

func TestBridgeMode(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Bridge}})
	c1, a1, _ := acrossHosts(t, lab, vocab.Bridge, 1, 2)

	// Detach removes the host end (and with it the container's), twice is
	// fine, and the address comes back with the same MAC, so the host's
	// neighbour entry is still right.
	if err := a1.Detach(); err != nil {
		t.Fatal(err)
	}
	if err := a1.Detach(); err != nil {
		t.Fatalf("second Detach: %v", err)
	}
	err := netns.Do(c1, func() error {
		_, err := netlink.LinkByName("ctb0")
		return err
	})
	if err == nil {
		t.Error("ctb0 still in the container after Detach")
	}
	a1 = attach(t, lab, vocab.Bridge, 1, c1, "198.18.1.2", 1500)
	echo(t, c1, a1.IP, lab.HostNS(2))
}

func TestOverlayMode(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Overlay}})
	if lab.Info()["overlay.mtu"] != "1450" {
		t.Errorf("info %v", lab.Info())
	}
	c1, c2 := container(t, lab, 1), container(t, lab, 2)
	a1 := attach(t, lab, vocab.Overlay, 1, c1, "198.19.1.2", 1450)
	a2 := attach(t, lab, vocab.Overlay, 2, c2, "198.19.2.2", 1450)
	echo(t, c2, a2.IP, c1)                                     // across hosts, through VXLAN
	echo(t, c1, a1.IP, lab.HostNS(1))                          // host to its own container
	echo(t, c1, a1.IP, lab.HostNS(2))                          // host to a container on another host
	echo(t, lab.HostNS(1), lab.HostAddr(vocab.Overlay, 1), c2) // container to another host's overlay address
	assertVXLAN(t, lab, overlayPlain)
}

// assertVXLAN checks every host's VXLAN device and flood entries.
func assertVXLAN(t *testing.T, lab *Lab, o overlay) {
	t.Helper()
	for h := 1; h <= lab.hosts; h++ {
		err := netns.Do(lab.HostNS(h), func() error {
			lk, err := netlink.LinkByName(o.vxlan)
			if err != nil {
				return err
			}
			vx, ok := lk.(*netlink.Vxlan)
			if !ok || vx.VxlanId != o.vni || !vx.SrcAddr.Equal(o.vtep(h)) || vx.MTU != o.mtu || vx.Port != o.port() || !vx.Learning {
				return fmt.Errorf("%s = %+v", o.vxlan, lk)
			}
			fdb, err := netlink.NeighList(lk.Attrs().Index, unix.AF_BRIDGE)
			if err != nil {
				return err
			}
			var dsts []string
			for _, n := range fdb {
				if n.HardwareAddr.String() == "00:00:00:00:00:00" {
					dsts = append(dsts, n.IP.String())
				}
			}
			var want []string
			for j := 1; j <= lab.hosts; j++ {
				if j != h {
					want = append(want, o.vtep(j).String())
				}
			}
			slices.Sort(dsts)
			slices.Sort(want)
			if !slices.Equal(dsts, want) {
				return fmt.Errorf("flood entries on %s go to %v, want %v", o.vxlan, dsts, want)
			}
			return nil
		})
		if err != nil {
			t.Errorf("host %d: %v", h, err)
		}
	}
}

func TestOVSMode(t *testing.T) {
	lab := newLab(t, Config{Modes: []vocab.Network{vocab.OVS}})
	if dp := lab.Info()["ovs.datapath"]; dp != "netdev" && dp != "system" {
		t.Errorf("ovs.datapath = %q", dp)
	}
	c1, c2 := container(t, lab, 1), container(t, lab, 2)
	a1 := attach(t, lab, vocab.OVS, 0, c1, "198.18.200.2", 1500)
	a2 := attach(t, lab, vocab.OVS, 0, c2, "198.18.200.3", 1500)
	if got := lab.HostAddr(vocab.OVS, 0); got != "198.18.200.1" {
		t.Errorf("HostAddr(ovs, 0) = %q", got)
	}
	echo(t, c2, a2.IP, c1)                      // container to container through OVS
	echo(t, c1, a1.IP, "")                      // the machine to a container
	echo(t, "", lab.HostAddr(vocab.OVS, 0), c2) // a container to the machine
	for _, a := range []Attachment{a1, a2} {    // Detach deletes the port and the veth, twice is fine
		if err := a.Detach(); err != nil {
			t.Fatal(err)
		}
		if err := a.Detach(); err != nil {
			t.Fatal(err)
		}
	}
	out, err := ovsVsctl(context.Background(), "list-ports", lab.ovsName())
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("ports left on %s: %q (%v)", lab.ovsName(), out, err)
	}
	for _, name := range []string{lab.name("s", 1), lab.name("s", 2)} {
		if _, err := netlink.LinkByName(name); err == nil {
			t.Errorf("%s still exists after Detach", name)
		}
	}
}

func TestMacvlanMode(t *testing.T) {
	lab := newLab(t, Config{Modes: []vocab.Network{vocab.Macvlan}})
	c1, c2 := container(t, lab, 1), container(t, lab, 2)
	a1 := attach(t, lab, vocab.Macvlan, 0, c1, "198.18.201.2", 1500)
	a2 := attach(t, lab, vocab.Macvlan, 0, c2, "198.18.201.3", 1500)
	echo(t, c2, a2.IP, c1)                          // container to container
	echo(t, c1, a1.IP, "")                          // the machine (its own macvlan child) to a container
	echo(t, "", lab.HostAddr(vocab.Macvlan, 0), c2) // a container to the machine
	if err := a1.Detach(); err != nil {
		t.Fatal(err)
	}
	if err := netns.Do(c1, func() error { _, err := netlink.LinkByName("ctb0"); return err }); err == nil {
		t.Error("macvlan still in the container after Detach")
	}
}

func TestConcurrentAttach(t *testing.T) {
	lab := newLab(t, Config{Hosts: 1, Modes: []vocab.Network{vocab.Bridge, vocab.OVS, vocab.Macvlan}})
	modes := []vocab.Network{vocab.Bridge, vocab.OVS, vocab.Macvlan}
	const n = 30
	paths := make([]string, n)
	for i := range paths {
		paths[i] = container(t, lab, i)
	}
	atts := make([]Attachment, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			mode := modes[i%3]
			host := 0
			if mode == vocab.Bridge {
				host = 1
			}
			atts[i], errs[i] = lab.Attach(context.Background(), mode, host, paths[i])
		})
	}
	wg.Wait()
	t.Logf("%d concurrent Attach calls took %v", n, time.Since(start).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, a := range atts {
		if seen[a.IP] {
			t.Errorf("address %s given twice", a.IP)
		}
		seen[a.IP] = true
		t.Cleanup(func() { _ = atts[i].Detach() })
	}
	// One path per mode, between the last two containers of each.
	for m := range 3 {
		echo(t, paths[n-3+m], atts[n-3+m].IP, paths[n-6+m])
	}
	start = time.Now()
	for i := range n {
		wg.Go(func() { errs[i] = atts[i].Detach() })
	}
	wg.Wait()
	t.Logf("%d concurrent Detach calls took %v", n, time.Since(start).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if used := lab.inUse; len(used[slot{vocab.OVS, 0}])+len(used[slot{vocab.Macvlan, 0}])+len(used[slot{vocab.Bridge, 1}]) != 0 {
		t.Errorf("addresses still allocated after Detach: %v", used)
	}
}

func TestUnderlayRate(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Host}, UnderlayRate: rate(t, "50mbit")})
	if got := lab.HostAddr(vocab.Host, 1); got != "198.18.0.1" {
		t.Errorf("HostAddr(host, 1) = %q", got)
	}
	if got := lab.HostAddr(vocab.Host, 0); got != "127.0.0.1" {
		t.Errorf("HostAddr(host, 0) = %q", got)
	}
	if lab.Info()["underlay.rate"] != "50mbit" {
		t.Errorf("info %v", lab.Info())
	}
	for h := 1; h <= 2; h++ {
		err := netns.Do(lab.HostNS(h), func() error {
			lk, err := netlink.LinkByName(ifUnderlay)
			if err != nil {
				return err
			}
			qs, err := netlink.QdiscList(lk)
			if err != nil {
				return err
			}
			for _, q := range qs {
				if tbf, ok := q.(*netlink.Tbf); ok && tbf.Rate == 50e6/8 {
					return nil
				}
			}
			return fmt.Errorf("no tbf at 50mbit on %s: %v", ifUnderlay, qs)
		})
		if err != nil {
			t.Errorf("host %d: %v", h, err)
		}
	}

	// A 2-second TCP stream from host 1 to host 2, measured by the receiver.
	var ln net.Listener
	if err := netns.Do(lab.HostNS(2), func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(lab.HostAddr(vocab.Host, 2), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const window = 2 * time.Second
	result := make(chan float64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			result <- -1
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<16)
		if _, err := io.ReadFull(c, buf[:1]); err != nil {
			result <- -1
			return
		}
		end := time.Now().Add(window)
		_ = c.SetReadDeadline(end)
		total := 1
		for {
			n, err := c.Read(buf)
			total += n
			if err != nil {
				break
			}
		}
		result <- float64(total) * 8 / window.Seconds() / 1e6
	}()
	var c net.Conn
	if err := netns.Do(lab.HostNS(1), func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer c.Close()
		buf := make([]byte, 1<<16)
		_ = c.SetWriteDeadline(time.Now().Add(window + 2*time.Second))
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	mbps := <-result
	t.Logf("host 1 -> host 2 through tbf 50mbit: %.1f Mbit/s", mbps)
	if mbps < 35 || mbps > 60 {
		t.Errorf("shaped stream ran at %.1f Mbit/s, want 35..60", mbps)
	}
}

// standIn is a Spawner for the tests: instead of a WireGuard agent it
// creates a plain persistent TUN device as the agent would (name, address,
// MTU, up), and records what it was asked.
type standIn struct {
	mu      sync.Mutex
	calls   map[string][]string // netns path -> args
	stopped int
	failOn  string // a netns path whose spawn fails
}

func (s *standIn) spawn(ctx context.Context, nsPath string, args []string) (func() error, error) {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string][]string{}
	}
	s.calls[nsPath] = args
	s.mu.Unlock()
	if nsPath == s.failOn {
		return nil, errors.New("stand-in refuses")
	}
	if len(args) != 4 || args[0] != "agent" || args[1] != "wireguard" || args[2] != "--config" {
		return nil, fmt.Errorf("args %q", args)
	}
	var cfg WireGuardConfig
	if err := json.Unmarshal([]byte(args[3]), &cfg); err != nil {
		return nil, err
	}
	addr, err := netlink.ParseAddr(cfg.Address)
	if err != nil {
		return nil, err
	}
	err = netns.Do(nsPath, func() error {
		tun := &netlink.Tuntap{
			LinkAttrs: netlink.LinkAttrs{Name: cfg.Interface, MTU: cfg.MTU},
			Mode:      netlink.TUNTAP_MODE_TUN,
			Flags:     netlink.TUNTAP_NO_PI,
		}
		if err := netlink.LinkAdd(tun); err != nil {
			return err
		}
		lk, err := netlink.LinkByName(cfg.Interface)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(lk, addr); err != nil {
			return err
		}
		return netlink.LinkSetUp(lk)
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		s.mu.Lock()
		s.stopped++
		s.mu.Unlock()
		return netns.Do(nsPath, func() error {
			lk, err := netlink.LinkByName(cfg.Interface)
			if err != nil {
				return nil
			}
			return netlink.LinkDel(lk)
		})
	}, nil
}

func TestOverlayEncryptedWiring(t *testing.T) {
	needRoot(t) // before the cleanup below, which would fail a skipped test
	const hosts = 3
	s := &standIn{}
	t.Cleanup(func() { // registered first, so it runs after the lab's Close
		if s.stopped != hosts {
			t.Errorf("Close called %d stop funcs, want %d", s.stopped, hosts)
		}
	})
	lab := newLab(t, Config{Hosts: hosts, Modes: []vocab.Network{vocab.OverlayEncrypted}, Spawn: s.spawn, skipWarmup: true})
	if got := lab.Info()["overlay-encrypted.wireguard"]; got != "userspace (wireguard-go)" {
		t.Errorf("info %v", lab.Info())
	}
	// Every host's agent got a config whose peers are the other hosts,
	// reached over the underlay, with their real public keys.
	pubOf := map[string]string{} // tunnel address -> public key
	cfgs := map[int]WireGuardConfig{}
	for h := 1; h <= hosts; h++ {
		args := s.calls[lab.HostNS(h)]
		if len(args) != 4 {
			t.Fatalf("host %d: spawned with %q", h, args)
		}
		var c WireGuardConfig
		if err := json.Unmarshal([]byte(args[3]), &c); err != nil {
			t.Fatal(err)
		}
		if c.Interface != "ctbwg0" || c.MTU != 1420 || c.ListenPort != 51820 || c.Address != fmt.Sprintf("198.18.250.%d/24", h) {
			t.Errorf("host %d: config %+v", h, c)
		}
		priv, err := base64.StdEncoding.DecodeString(c.PrivateKey)
		if err != nil || len(priv) != 32 {
			t.Fatalf("host %d: private key %q", h, c.PrivateKey)
		}
		pub, err := curve25519.X25519(priv, curve25519.Basepoint)
		if err != nil {
			t.Fatal(err)
		}
		pubOf[fmt.Sprintf("198.18.250.%d/32", h)] = base64.StdEncoding.EncodeToString(pub)
		cfgs[h] = c
	}
	for h, c := range cfgs {
		if len(c.Peers) != hosts-1 {
			t.Errorf("host %d: %d peers", h, len(c.Peers))
		}
		for _, p := range c.Peers {
			if len(p.AllowedIPs) != 1 || pubOf[p.AllowedIPs[0]] != p.PublicKey {
				t.Errorf("host %d: peer %+v has the wrong key", h, p)
				continue
			}
			j := strings.TrimSuffix(strings.TrimPrefix(p.AllowedIPs[0], "198.18.250."), "/32")
			if p.Endpoint != "198.18.0."+j+":51820" || j == fmt.Sprint(h) {
				t.Errorf("host %d: peer %+v", h, p)
			}
		}
	}
	assertVXLAN(t, lab, overlayEncrypted)
	c1 := container(t, lab, 1)
	attach(t, lab, vocab.OverlayEncrypted, 1, c1, "198.19.65.2", 1370)
	if got := lab.HostAddr(vocab.OverlayEncrypted, 2); got != "198.19.66.1" {
		t.Errorf("HostAddr(overlay-encrypted, 2) = %q", got)
	}
}

func TestOverlayEncryptedSpawnFails(t *testing.T) {
	needRoot(t)
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s := &standIn{failOn: netns.RunDir + "/ctb" + tok + "h2"}
	_, err = New(context.Background(), Config{Token: tok, Hosts: 2, Modes: []vocab.Network{vocab.OverlayEncrypted}, Spawn: s.spawn, skipWarmup: true})
	if err == nil || !strings.Contains(err.Error(), "stand-in refuses") {
		t.Errorf("New = %v, want the spawn error", err)
	}
	if s.stopped != 1 {
		t.Errorf("%d agents stopped, want host 1's", s.stopped)
	}
	assertGone(t, tok)
}

func TestClean(t *testing.T) {
	needRoot(t)
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	ovsBefore := ovsRunning(context.Background())
	lab, err := New(context.Background(), Config{Token: tok, Hosts: 2, Modes: []vocab.Network{vocab.Bridge, vocab.Overlay, vocab.OVS, vocab.Macvlan}})
	if err != nil {
		t.Fatal(err)
	}
	c1, err := netns.Create("ctb" + tok + "c1")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		mode vocab.Network
		host int
	}{{vocab.OVS, 0}, {vocab.Macvlan, 0}, {vocab.Bridge, 1}, {vocab.Overlay, 2}} {
		if _, err := lab.Attach(context.Background(), m.mode, m.host, c1); err != nil && !strings.Contains(err.Error(), "default route") {
			t.Fatal(err)
		}
	}
	// "Crash": no Close. Clean proper removes every ctb* namespace on the
	// machine, which would hit other work running on it; the same code
	// limited to this token runs here.
	removed, err := clean("ctb"+tok, "ctb"+tok, rootLinkRE(tok))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %v", removed)
	for _, want := range []string{"netns ctb" + tok + "h1", "netns ctb" + tok + "u", "netns ctb" + tok + "c1", "ovs-bridge ctb" + tok + "s", "link ctb" + tok + "m"} {
		if !slices.Contains(removed, want) {
			t.Errorf("removed %v, missing %q", removed, want)
		}
	}
	assertGone(t, tok)
	if !ovsBefore && ovsRunning(context.Background()) {
		t.Error("Open vSwitch, started by the lab, still runs after Clean")
	}
	if err := lab.Close(); err != nil {
		t.Errorf("Close after Clean: %v", err)
	}
}

// TestOVSBetweenHosts: with two emulated hosts each gets an OVS bridge of
// its own, its uplink in the host's namespace; a container on one host
// reaches a container on the other (OVS, host, underlay, host, OVS), each
// host its own containers and the other's, and Detach and Close leave no
// port, veth or bridge.
func TestOVSBetweenHosts(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.OVS}})
	c1, a1, a2 := acrossHosts(t, lab, vocab.OVS, 101, 102)
	for h, a := range []Attachment{a1, a2} {
		if err := a.Detach(); err != nil {
			t.Fatal(err)
		}
		if err := a.Detach(); err != nil {
			t.Fatal(err)
		}
		out, err := ovsVsctl(context.Background(), "list-ports", lab.ovsHostBridge(h+1))
		if err != nil || strings.TrimSpace(out) != lab.name("q", h+1) {
			t.Errorf("ports on %s after Detach: %q (%v), want its uplink alone", lab.ovsHostBridge(h+1), out, err)
		}
	}
	a1 = attach(t, lab, vocab.OVS, 1, c1, "198.18.101.2", 1500)
	echo(t, c1, a1.IP, lab.HostNS(2))
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if brs, err := ovsListBridges(context.Background()); err == nil {
		for _, br := range brs {
			if strings.HasPrefix(br, "ctb"+lab.tok) {
				t.Errorf("OVS bridge %s left after Close", br)
			}
		}
	}
}

func TestRootLinkPattern(t *testing.T) {
	re := rootLinkRE("")
	for _, name := range []string{"ctb1a2bs", "ctb1a2bs12", "ctb1a2bp3", "ctb1a2bm", "ctb1a2bn", "ctb1a2bmh",
		"ctb1a2bo2", "ctb1a2bq2", "ctb1a2br2", "ctb1a2bs2x3", "ctb1a2bp16x254"} {
		if !re.MatchString(name) {
			t.Errorf("%s not matched", name)
		}
	}
	for _, name := range []string{"ctbtest0", "ctb1a2bh1", "ctb1a2bc1", "ctbul0", "ctb0", "eth0", "ctb1a2bmx", "ctbcecea"} {
		if re.MatchString(name) {
			t.Errorf("%s matched", name)
		}
	}
	if !rootLinkRE("1a2b").MatchString("ctb1a2bs4") || rootLinkRE("1a2b").MatchString("ctb3c4ds4") {
		t.Error("token pattern")
	}
}

func TestNamesFitIFNAMSIZ(t *testing.T) {
	l := &Lab{tok: "abcd"}
	for _, name := range []string{l.name("h", MaxHosts), l.name("u", MaxHosts), l.name("s", 253), l.name("p", 253),
		l.name("b", 254), l.name("o", 254), l.name("e", 254), "ctb" + l.tok + "mh", l.ovsName(), l.switchName(),
		l.ovsHostBridge(MaxHosts), l.name("q", MaxHosts), l.name("r", MaxHosts), l.name(fmt.Sprintf("s%dx", MaxHosts), 254), l.name(fmt.Sprintf("p%dx", MaxHosts), 254)} {
		if len(name) > 15 {
			t.Errorf("%s is longer than 15", name)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Token: "xyz1"}, "token"},
		{Config{Token: "ab12", Modes: []vocab.Network{"ipvlan"}}, "unknown mode"},
		{Config{Token: "ab12", Hosts: 1, Modes: []vocab.Network{vocab.Overlay}}, "at least 2"},
		{Config{Token: "ab12", Hosts: 0, Modes: []vocab.Network{vocab.Bridge}}, "emulated hosts"},
		{Config{Token: "ab12", Hosts: 2, Modes: []vocab.Network{vocab.OverlayEncrypted}}, "Spawn"},
		{Config{Token: "ab12", UnderlayRate: rate(t, "1gbit")}, "emulated hosts"},
		{Config{Token: "ab12", Hosts: 100}, "hosts"},
	} {
		_, err := New(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error about %q", c.cfg, err, c.want)
		}
	}
}

func TestWrongModeAndHost(t *testing.T) {
	lab := newLab(t, Config{Hosts: 1, Modes: []vocab.Network{vocab.Bridge, vocab.Macvlan}})
	c1 := container(t, lab, 1)
	for _, c := range []struct {
		mode vocab.Network
		host int
		want string
	}{
		{vocab.Macvlan, 1, "only on the machine itself (host 0)"},
		{vocab.OVS, 1, "between emulated hosts needs two or more"},
		{vocab.Bridge, 0, "needs emulated hosts"},
		{vocab.Overlay, 0, "needs emulated hosts"},
		{vocab.Overlay, 1, "not built"},
		{vocab.Bridge, 2, "no host 2"},
		{vocab.Host, 1, "nothing to attach"},
		{"ipvlan", 0, "unknown mode"},
	} {
		_, err := lab.Attach(context.Background(), c.mode, c.host, c1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Attach(%s, %d) = %v, want an error about %q", c.mode, c.host, err, c.want)
		}
		if c.mode != vocab.Host && lab.HostAddr(c.mode, c.host) != "" {
			t.Errorf("HostAddr(%s, %d) = %q, want none", c.mode, c.host, lab.HostAddr(c.mode, c.host))
		}
	}
	if _, err := lab.Attach(context.Background(), vocab.Bridge, 1, "/nonexistent"); err == nil {
		t.Error("Attach to a missing namespace succeeded")
	}
	if lab.HostNS(2) != "" || lab.HostNS(0) != "" || lab.HostNS(1) == "" {
		t.Errorf("HostNS: %q %q %q", lab.HostNS(0), lab.HostNS(1), lab.HostNS(2))
	}

	// Detach after Close is fine (the host, and the veth, are gone), and a
	// closed lab attaches nothing.
	a, err := lab.Attach(context.Background(), vocab.Bridge, 1, c1)
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Detach(); err != nil {
		t.Errorf("Detach after Close: %v", err)
	}
	if _, err := lab.Attach(context.Background(), vocab.Macvlan, 0, c1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Attach on a closed lab = %v", err)
	}
}

// TestAllModesTogether builds every mode in one lab: they must not get in
// each other's way (the two overlays use UDP ports 4789 and 4790 in every host).
func TestAllModesTogether(t *testing.T) {
	s := &standIn{}
	lab := newLab(t, Config{
		Hosts: 2,
		Modes: []vocab.Network{vocab.Host, vocab.Bridge, vocab.Overlay, vocab.OverlayEncrypted, vocab.OVS, vocab.Macvlan},
		Spawn: s.spawn,

		skipWarmup: true,
	})
	pairs := []struct {
		mode         vocab.Network
		hostA, hostB int
	}{
		{vocab.Bridge, 1, 2}, {vocab.Overlay, 1, 2}, {vocab.OVS, 0, 0}, {vocab.Macvlan, 0, 0},
	}
	for i, p := range pairs {
		ca, cb := container(t, lab, 2*i), container(t, lab, 2*i+1)
		a, err := lab.Attach(context.Background(), p.mode, p.hostA, ca)
		if err != nil {
			t.Fatal(err)
		}
		b, err := lab.Attach(context.Background(), p.mode, p.hostB, cb)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, cb, b.IP, ca)
		echo(t, ca, a.IP, cb)
	}
	// The encrypted overlay is wired (its traffic needs the real agent).
	c := container(t, lab, 9)
	if _, err := lab.Attach(context.Background(), vocab.OverlayEncrypted, 2, c); err != nil {
		t.Fatal(err)
	}
	assertVXLAN(t, lab, overlayPlain)
	assertVXLAN(t, lab, overlayEncrypted)
	echo(t, lab.HostNS(2), lab.HostAddr(vocab.Host, 2), lab.HostNS(1))
}

// SetUnderlay reshapes the underlay between trials: a stream measures
// the new rate, and "none" removes the shaping.
func TestSetUnderlayRate(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Host}})
	if err := lab.SetUnderlay(underlay(t, "40mbit")); err != nil {
		t.Fatal(err)
	}
	if got := lab.Info()["underlay.rate"]; got != "40mbit" {
		t.Errorf("info underlay.rate %q", got)
	}
	if err := lab.SetUnderlay(underlay(t, "none")); err != nil {
		t.Fatal(err)
	}
	h, err := handleAt(lab.HostNS(1))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ul, err := h.LinkByName(ifUnderlay)
	if err != nil {
		t.Fatal(err)
	}
	qs, _ := h.QdiscList(ul)
	for _, q := range qs {
		if q.Type() == "tbf" {
			t.Errorf("tbf still on the underlay after none: %+v", q)
		}
	}
}

// underlay is an underlay the test spells right.
func underlay(t *testing.T, s string) vocab.Underlay {
	t.Helper()
	u, err := vocab.ParseUnderlay(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A lab with delay lines carries the underlay's traffic (the echo is
// whole) and holds every frame a host sends for half the round trip's
// delay: no round trip of 20 takes less than the 20 ms asked (how much
// more is timing, which e2e TestDelayLine judges by intervals); lost
// frames are counted.
func TestDelayLine(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Host}, DelayLine: true})
	if err := lab.SetUnderlay(underlay(t, "1gbit")); err != nil {
		t.Fatal(err)
	}
	echo(t, lab.HostNS(2), lab.HostAddr(vocab.Host, 2), lab.HostNS(1))
	base := roundTrips(t, lab)
	if err := lab.SetUnderlay(underlay(t, "1gbit delay 20ms")); err != nil {
		t.Fatal(err)
	}
	got := roundTrips(t, lab)
	if got[0] < 20*time.Millisecond {
		t.Errorf("delay 20ms: a round trip took %v", got[0])
	}
	t.Logf("round trips: median %v without delay, %v with 20ms (shortest %v)", base[len(base)/2], got[len(got)/2], got[0])
	if err := lab.SetUnderlay(underlay(t, "1gbit loss 10%")); err != nil {
		t.Fatal(err)
	}
	before, _ := lab.DelayLines()
	st, ok := before, false
	// TCP resends what is lost; a few echoes cross hundreds of frames, of
	// which none lost has a chance below 1e-9.
	for i := 0; i < 10 && st.Lost == before.Lost; i++ {
		echo(t, lab.HostNS(2), lab.HostAddr(vocab.Host, 2), lab.HostNS(1))
		st, ok = lab.DelayLines()
	}
	if !ok || st.Lost == before.Lost || st.Frames == 0 || st.Back == 0 {
		t.Errorf("stats %+v (before %+v): want frames both ways and losses", st, before)
	}
	if st.CPU <= 0 {
		t.Logf("the lines' threads report no CPU time yet (%v s): ticks are 10 ms", st.CPU)
	}
	plain := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Host}})
	if err := plain.SetUnderlay(underlay(t, "1gbit delay 2ms")); err == nil {
		t.Error("a lab without delay lines accepted a delay")
	}
}

// roundTrips are the times of 20 one-byte round trips on a TCP connection
// from host 1 to host 2, shortest first.
func roundTrips(t *testing.T, lab *Lab) []time.Duration {
	t.Helper()
	c, _, done := echoConn(t, lab.HostNS(2), lab.HostAddr(vocab.Host, 2), lab.HostNS(1))
	defer done()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	var rtts []time.Duration
	b := []byte{1}
	for range 20 {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	return rtts
}

// rate is a rate the test spells right.
func rate(t *testing.T, s string) vocab.Rate {
	t.Helper()
	r, err := vocab.ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAdoptedHostNamespace builds host 1 on a namespace something else
// holds (a process that unshared its own, as Docker's anchor container
// does) and host 2 on one of the lab's: what runs in the holder's
// namespace is on host 1, across the bridge to host 2 and its
// containers, and Close ends the holder with the namespace.
func TestAdoptedHostNamespace(t *testing.T) {
	needRoot(t)
	src, waited := testutil.HoldNetNS(t)
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Bridge}, HostNamespaces: []string{src}})
	var held, named unix.Stat_t
	if err := unix.Stat(src, &held); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(lab.HostNS(1), &named); err != nil {
		t.Fatal(err)
	}
	if held.Ino != named.Ino {
		t.Fatalf("host 1's namespace %s is not the holder's", lab.HostNS(1))
	}
	acrossHosts(t, lab, vocab.Bridge, 1, 2)
	echo(t, lab.HostNS(2), lab.HostAddr(vocab.Host, 2), src) // the holder's namespace is host 1's
	echo(t, src, lab.HostAddr(vocab.Host, 1), lab.HostNS(2))
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Error("the holder still runs after Close")
	}
}

// TestPlugTap takes a tap (a virtual machine's NIC, made by its platform)
// as a port of the machine's OVS bridge: it gets the OVS network's first
// free address and the host's as gateway, the port goes on Detach (twice
// is fine) and the tap stays, its maker's; only OVS on the machine plugs.
func TestPlugTap(t *testing.T) {
	lab := newLab(t, Config{Modes: []vocab.Network{vocab.OVS, vocab.Macvlan}})
	tap := lab.name("x", 1)
	if err := rootNL.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: tap}, Mode: netlink.TUNTAP_MODE_TAP}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if lk, err := rootNL.LinkByName(tap); err == nil {
			_ = rootNL.LinkDel(lk)
		}
	}()
	if _, err := lab.Plug(context.Background(), vocab.Macvlan, 0, tap); err == nil {
		t.Error("macvlan took a tap as a port")
	}
	a, err := lab.Plug(context.Background(), vocab.OVS, 0, tap)
	if err != nil {
		t.Fatal(err)
	}
	if a.IP != "198.18.200.2" || a.Prefix != 24 || a.Gateway != lab.HostAddr(vocab.OVS, 0) || a.Iface != tap {
		t.Errorf("Plug = %+v", a)
	}
	ports, err := ovsVsctl(context.Background(), "list-ports", lab.ovsName())
	if err != nil || !slices.Contains(strings.Fields(ports), tap) {
		t.Errorf("ports of %s: %q (%v), want %s", lab.ovsName(), ports, err, tap)
	}
	for range 2 {
		if err := a.Detach(); err != nil {
			t.Fatal(err)
		}
	}
	ports, _ = ovsVsctl(context.Background(), "list-ports", lab.ovsName())
	if slices.Contains(strings.Fields(ports), tap) {
		t.Errorf("%s still a port after Detach", tap)
	}
	if _, err := rootNL.LinkByName(tap); err != nil {
		t.Errorf("the tap went with the port: %v", err)
	}
	if b, err := lab.Plug(context.Background(), vocab.OVS, 0, tap); err != nil || b.IP != a.IP {
		t.Errorf("plugged again: %+v %v, want the freed address %s", b, err, a.IP)
	} else {
		_ = b.Detach()
	}
}

// TestPlugTapIntoHost: a virtual machine's tap on an emulated host. On
// the bridge, the lab moves it into the host's namespace as a port of the
// host's bridge, up, and gives the machine an address on the host's
// subnet; the file descriptor its maker opened before stays the tap's.
// Detach deletes it there, and a tap still plugged when the lab closes
// goes with the host: none comes back to the machine's namespace
// (assertGone). On OVS it becomes a port of the host's OVS bridge, which
// is in the machine's namespace, and Detach leaves it to its maker.
func TestPlugTapIntoHost(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Bridge, vocab.OVS}})
	mkTap := func(i int) (string, *os.File) {
		tap := lab.name("x", i)
		if err := rootNL.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: tap}, Mode: netlink.TUNTAP_MODE_TAP,
			Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if lk, err := rootNL.LinkByName(tap); err == nil {
				_ = rootNL.LinkDel(lk)
			}
		})
		f, err := links.OpenTap(tap)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return tap, f
	}
	tap, f := mkTap(1)
	if _, err := lab.Plug(context.Background(), vocab.Overlay, 1, tap); err == nil {
		t.Error("a host's overlay took a tap")
	}
	a, err := lab.Plug(context.Background(), vocab.Bridge, 2, tap)
	if err != nil {
		t.Fatal(err)
	}
	if a.IP != "198.18.2.2" || a.Prefix != 24 || a.Gateway != "198.18.2.1" || a.Gateway != lab.HostAddr(vocab.Bridge, 2) || a.Iface != tap {
		t.Errorf("Plug = %+v", a)
	}
	if _, err := rootNL.LinkByName(tap); err == nil {
		t.Errorf("%s is still in the machine's namespace", tap)
	}
	h, err := handleAt(lab.HostNS(2))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lk, err := h.LinkByName(tap)
	if err != nil {
		t.Fatalf("%s is not in host 2: %v", tap, err)
	}
	br, err := h.LinkByName(ifBridge)
	if err != nil || lk.Attrs().MasterIndex != br.Attrs().Index || lk.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("%s in host 2: master %d, flags %v; want up in %s (%v)", tap, lk.Attrs().MasterIndex, lk.Attrs().Flags, ifBridge, err)
	}
	ifr, err := unix.NewIfreq("")
	if err == nil {
		err = unix.IoctlIfreq(int(f.Fd()), unix.TUNGETIFF, ifr)
	}
	if err != nil || ifr.Name() != tap {
		t.Errorf("the maker's descriptor after the move: %q, %v; want still %s", ifr.Name(), err, tap)
	}
	for range 2 {
		if err := a.Detach(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.LinkByName(tap); err == nil {
		t.Errorf("%s still in host 2 after Detach", tap)
	}
	// One left plugged, for Close.
	tap2, _ := mkTap(2)
	if b, err := lab.Plug(context.Background(), vocab.Bridge, 2, tap2); err != nil || b.IP != a.IP {
		t.Errorf("plugged again: %+v %v, want the freed address %s", b, err, a.IP)
	}

	tap3, _ := mkTap(3)
	o, err := lab.Plug(context.Background(), vocab.OVS, 1, tap3)
	if err != nil {
		t.Fatal(err)
	}
	if o.IP != "198.18.101.2" || o.Prefix != 24 || o.Gateway != "198.18.101.1" || o.Gateway != lab.HostAddr(vocab.OVS, 1) {
		t.Errorf("Plug into host 1's OVS = %+v", o)
	}
	ports, err := ovsVsctl(context.Background(), "list-ports", lab.ovsHostBridge(1))
	if err != nil || !slices.Contains(strings.Fields(ports), tap3) {
		t.Errorf("ports of %s: %q (%v), want %s", lab.ovsHostBridge(1), ports, err, tap3)
	}
	if err := o.Detach(); err != nil {
		t.Fatal(err)
	}
	if ports, _ := ovsVsctl(context.Background(), "list-ports", lab.ovsHostBridge(1)); slices.Contains(strings.Fields(ports), tap3) {
		t.Errorf("%s still a port after Detach", tap3)
	}
	if _, err := rootNL.LinkByName(tap3); err != nil {
		t.Errorf("the tap went with the port: %v", err)
	}
}

// TestPublishedBetweenHosts: S3's two hosts with Docker's NAT. A server
// on host 2's NAT bridge is reached at the port the lab published on host
// 2's underlay address — from a container on host 1's NAT bridge (its
// source masqueraded to host 1's address), from host 1 itself, and from
// host 2's own processes — and not at its own address, to which no host
// routes. Unpublished, the port answers no more.
func TestPublishedBetweenHosts(t *testing.T) {
	lab := newLab(t, Config{Hosts: 2, Modes: []vocab.Network{vocab.Published}})
	c1, c2 := container(t, lab, 1), container(t, lab, 2)
	attach(t, lab, vocab.Published, 1, c1, "198.18.151.2", 1500)
	a2 := attach(t, lab, vocab.Published, 2, c2, "198.18.152.2", 1500)
	var ln net.Listener
	if err := inNS(c2, func() (err error) { ln, err = net.Listen("tcp", "0.0.0.0:15201"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, c.RemoteAddr())
			c.Close()
		}
	}()
	ports, unpublish, err := lab.Publish(2, a2.IP, []vocab.Port{{Number: 15201, Proto: "tcp"}, {Number: 15201, Proto: "udp"}})
	if err != nil {
		t.Fatal(err)
	}
	at := ports["15201/tcp"]
	if host, _, _ := net.SplitHostPort(at); host != "198.18.0.2" || ports["15201/udp"] != at {
		t.Fatalf("published at %v, want host 2's underlay address, one port number for both protocols", ports)
	}
	// A path that works connects within patience: a busy machine can
	// lose the first SYN to a neighbour entry still being resolved, and
	// TCP sends it again after a second (a 1 s bound failed make test
	// once); one that must not work is given a second.
	peer := func(from, to string, patience time.Duration) (string, error) {
		var line string
		err := inNS(from, func() error {
			c, err := net.DialTimeout("tcp", to, patience)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			line, err = bufio.NewReader(c).ReadString('\n')
			return err
		})
		return strings.TrimSpace(line), err
	}
	for _, from := range []struct{ ns, sourceHost string }{
		{c1, "198.18.0.1"},            // a container on host 1, masqueraded
		{lab.HostNS(1), "198.18.0.1"}, // host 1
		{lab.HostNS(2), "198.18.0.2"}, // host 2's own processes (OUTPUT), from the address they dialled
	} {
		got, err := peer(from.ns, at, 10*time.Second)
		if err != nil {
			t.Errorf("%s to %s: %v", from.ns, at, err)
			continue
		}
		if host, _, _ := net.SplitHostPort(got); host != from.sourceHost {
			t.Errorf("%s to %s: the server saw %s, want %s", from.ns, at, got, from.sourceHost)
		}
	}
	if _, err := peer(c1, net.JoinHostPort(a2.IP, "15201"), time.Second); err == nil {
		t.Errorf("a container on host 1 reached host 2's container at its own address %s: its NAT bridge is routed to", a2.IP)
	}
	for range 2 {
		if err := unpublish(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := peer(c1, at, time.Second); err == nil {
		t.Errorf("%s still answers after unpublish", at)
	}
}
