package wireguard

// End to end: two wireguard-go instances, each in its own process inside its
// own network namespace, joined by a veth pair, carry TCP between the tunnel
// addresses. Everything created is named ctb<4 hex digits>… and removed.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// childEnv, when set, holds the JSON Config the test binary runs as a
// tunnel process instead of running tests.
const childEnv = "CTB_WG_CHILD"

// streamEnv, when set to a number of seconds, makes the tunnel test also
// measure a TCP stream of that length (logged, not asserted).
const streamEnv = "CTB_WG_STREAM_SECONDS"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(runChild(cfg))
	}
	os.Exit(m.Run())
}

// runChild is the tunnel process: Run until SIGTERM, "ready" on stdout.
func runChild(cfg string) int {
	var c Config
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintf(os.Stderr, "child: decoding %s: %v\n", childEnv, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, c, os.Stderr, func() { os.Stdout.WriteString("ready\n") }); err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		return 1
	}
	return 0
}

const (
	vethA, vethB     = "10.250.0.1/24", "10.250.0.2/24"
	tunA, tunB       = "10.251.0.1/24", "10.251.0.2/24"
	port             = 51820
	payloadSize      = 8 << 20
	tunMTU           = 1420
	plaintextMarker  = "CTB-PLAINTEXT-MARKER-7f3a9c"
	markerEvery      = 4096
	readyTimeout     = 10 * time.Second
	stopTimeout      = 10 * time.Second
	badDialTimeout   = 3 * time.Second
	transferDeadline = 20 * time.Second
)

func TestTunnelCarriesEncryptedTCP(t *testing.T) {
	testutil.RequireRoot(t)
	if testing.Short() {
		t.Skip("creates namespaces, links and processes")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no TUN: %v", err)
	}
	n := newTestNet(t)

	skA, pkA := genKey(t)
	skB, pkB := genKey(t)
	cfgA := Config{
		Interface: n.id + "wa", MTU: tunMTU, Address: tunA, PrivateKey: skA, ListenPort: port,
		Peers: []Peer{{PublicKey: pkB, Endpoint: ip(vethB) + ":" + strconv.Itoa(port), AllowedIPs: []string{ip(tunB) + "/32"}}},
	}
	cfgB := Config{
		Interface: n.id + "wb", MTU: tunMTU, Address: tunB, PrivateKey: skB, ListenPort: port,
		Peers: []Peer{{PublicKey: pkA, Endpoint: ip(vethA) + ":" + strconv.Itoa(port), AllowedIPs: []string{ip(tunA) + "/32"}}},
	}

	t.Run("traffic flows, encrypted", func(t *testing.T) {
		a := n.start(t, n.nsA, cfgA)
		b := n.start(t, n.nsB, cfgB)
		a.waitReady(t)
		b.waitReady(t)
		n.checkTUN(t, n.hA, cfgA)
		n.checkTUN(t, n.hB, cfgB)

		payload := makePayload()
		veth0 := n.stats(t, n.hB, n.id+"y")
		tun0 := n.stats(t, n.hB, cfgB.Interface)
		udp0 := n.udpInDatagrams(t, n.nsB)
		capVeth := n.capture(t, n.nsB, n.hB, n.id+"y", true)
		capTUN := n.capture(t, n.nsB, n.hB, cfgB.Interface, false)

		elapsed := n.transfer(t, payload)

		capVeth.stop()
		capTUN.stop()
		veth1 := n.stats(t, n.hB, n.id+"y")
		tun1 := n.stats(t, n.hB, cfgB.Interface)
		udp1 := n.udpInDatagrams(t, n.nsB)

		t.Logf("8 MiB through the tunnel in %v: %.0f MB/s (%s)", elapsed.Round(time.Millisecond),
			float64(payloadSize)/elapsed.Seconds()/1e6, Kind())
		t.Logf("veth %sy: +%d bytes, +%d packets; TUN %s: +%d bytes; UDP InDatagrams +%d",
			n.id, veth1.RxBytes-veth0.RxBytes, veth1.RxPackets-veth0.RxPackets, cfgB.Interface, tun1.RxBytes-tun0.RxBytes, udp1-udp0)
		t.Logf("captured on the veth: %s; on the TUN: %s", capVeth, capTUN)

		// The ciphertext crossed the veth as UDP to WireGuard's port and
		// was delivered to b's socket; b's wireguard-go wrote the
		// plaintext into its TUN.
		if d := veth1.RxBytes - veth0.RxBytes; d < payloadSize {
			t.Errorf("veth in b received %d bytes during an 8 MiB transfer", d)
		}
		if d := tun1.RxBytes - tun0.RxBytes; d < payloadSize {
			t.Errorf("TUN in b received %d bytes from wireguard-go during an 8 MiB transfer", d)
		}
		if udp1 <= udp0 {
			t.Errorf("UDP InDatagrams in b did not grow (%d → %d)", udp0, udp1)
		}
		// What the wire saw: WireGuard's UDP, never TCP, never the
		// plaintext, which the TUN did carry.
		if capVeth.wgUDP.Load() == 0 {
			t.Error("no UDP to or from port 51820 captured on the veth")
		}
		if c := capVeth.tcp.Load(); c != 0 {
			t.Errorf("%d TCP packets crossed the veth in clear", c)
		}
		if c := capVeth.marker.Load(); c != 0 {
			t.Errorf("plaintext seen on the veth in %d frames", c)
		}
		if capTUN.marker.Load() == 0 {
			t.Error("plaintext marker never seen on the TUN: the capture proves nothing")
		}

		if s := os.Getenv(streamEnv); s != "" {
			secs, err := strconv.Atoi(s)
			if err != nil || secs <= 0 {
				t.Fatalf("%s=%q: want a number of seconds", streamEnv, s)
			}
			sent, d := n.stream(t, time.Duration(secs)*time.Second)
			t.Logf("TCP stream for %v: %d bytes, %.0f MB/s (%.2f Gbit/s)", d.Round(time.Millisecond), sent,
				float64(sent)/d.Seconds()/1e6, float64(sent)*8/d.Seconds()/1e9)
		}

		a.stopAndCheck(t, n.hA)
		b.stopAndCheck(t, n.hB)
	})

	t.Run("wrong peer key: no connection", func(t *testing.T) {
		_, wrong := genKey(t)
		bad := cfgA
		bad.Peers = []Peer{cfgA.Peers[0]}
		bad.Peers[0].PublicKey = wrong
		a := n.start(t, n.nsA, bad)
		b := n.start(t, n.nsB, cfgB)
		a.waitReady(t)
		b.waitReady(t)

		tun0 := n.stats(t, n.hB, cfgB.Interface)
		udp0 := n.udpInDatagrams(t, n.nsB)
		ln := n.listen(t)
		start := time.Now()
		var c net.Conn
		err := n.in(n.nsA, func() (err error) {
			c, err = net.DialTimeout("tcp4", ln.Addr().String(), badDialTimeout)
			return err
		})
		took := time.Since(start)
		if err == nil {
			c.Close()
			t.Fatal("TCP connect through the tunnel succeeded with a wrong peer key")
		}
		if took > badDialTimeout+10*time.Second { // the dial's own bound, with room for a busy machine
			t.Errorf("connect took %v to fail", took)
		}
		tun1 := n.stats(t, n.hB, cfgB.Interface)
		udp1 := n.udpInDatagrams(t, n.nsB)
		t.Logf("connect failed after %v: %v; b's UDP InDatagrams +%d, TUN rx +%d packets", took.Round(time.Millisecond), err, udp1-udp0, tun1.RxPackets-tun0.RxPackets)
		// a's handshake initiations reached b's socket, and b refused them:
		// nothing came out of b's tunnel.
		if udp1 <= udp0 {
			t.Errorf("no handshake initiation reached b (UDP InDatagrams %d → %d)", udp0, udp1)
		}
		if d := tun1.RxPackets - tun0.RxPackets; d != 0 {
			t.Errorf("b's wireguard-go delivered %d packets from a peer with the wrong key", d)
		}

		a.stopAndCheck(t, n.hA)
		b.stopAndCheck(t, n.hB)
	})

	t.Run("IPv6 address, default MTU, no peers", func(t *testing.T) {
		sk, _ := genKey(t)
		c := Config{Interface: n.id + "w6", Address: "fd00:cb::1/64", PrivateKey: sk}
		p := n.start(t, n.nsA, c)
		p.waitReady(t)
		n.checkTUN(t, n.hA, c)
		p.stopAndCheck(t, n.hA)
	})

	n.teardown(t)
	n.checkNothingLeft(t)
}

func genKey(t *testing.T) (private, public string) {
	t.Helper()
	sk, pk, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return sk, pk
}

func ip(cidr string) string { return strings.Split(cidr, "/")[0] }

// makePayload is 8 MiB of pseudo-random bytes with a plaintext marker every
// 4 KiB, for the capture to look for.
func makePayload() []byte {
	b := make([]byte, payloadSize)
	r := mrand.NewChaCha8([32]byte{'c', 't', 'b'})
	r.Read(b)
	for i := 0; i+len(plaintextMarker) <= len(b); i += markerEvery {
		copy(b[i:], plaintextMarker)
	}
	return b
}

// testNet is two named namespaces, a and b, joined by a veth pair.
type testNet struct {
	id         string // ctb + 4 hex digits: the prefix of every name
	nsA, nsB   netns.NsHandle
	hA, hB     *netlink.Handle
	mu         sync.Mutex
	procs      []*tunnelProc
	closers    []io.Closer
	tornDown   bool
	namespaces []string
}

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	var r [2]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	n := &testNet{id: "ctb" + hex.EncodeToString(r[:]), nsA: -1, nsB: -1}
	t.Cleanup(func() { n.teardown(t) })

	var err error
	if n.nsA, err = n.newNamedNS(n.id + "a"); err != nil {
		t.Fatal(err)
	}
	if n.nsB, err = n.newNamedNS(n.id + "b"); err != nil {
		t.Fatal(err)
	}
	if n.hA, err = netlink.NewHandleAt(n.nsA); err != nil {
		t.Fatalf("netlink in %sa: %v", n.id, err)
	}
	if n.hB, err = netlink.NewHandleAt(n.nsB); err != nil {
		t.Fatalf("netlink in %sb: %v", n.id, err)
	}
	// The veth is created straight into the namespaces: it never exists
	// in the host's.
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: n.id + "x"},
		PeerName:      n.id + "y",
		PeerNamespace: netlink.NsFd(int(n.nsB)),
	}
	if err := n.hA.LinkAdd(veth); err != nil {
		t.Fatalf("creating veth %sx/%sy: %v", n.id, n.id, err)
	}
	for _, side := range []struct {
		h          *netlink.Handle
		link, addr string
	}{{n.hA, n.id + "x", vethA}, {n.hB, n.id + "y", vethB}} {
		lo, err := side.h.LinkByName("lo")
		if err == nil {
			err = side.h.LinkSetUp(lo)
		}
		if err != nil {
			t.Fatalf("bringing lo up: %v", err)
		}
		l, err := side.h.LinkByName(side.link)
		if err != nil {
			t.Fatal(err)
		}
		a, err := netlink.ParseAddr(side.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := side.h.AddrAdd(l, a); err != nil {
			t.Fatalf("adding %s to %s: %v", side.addr, side.link, err)
		}
		if err := side.h.LinkSetUp(l); err != nil {
			t.Fatalf("bringing %s up: %v", side.link, err)
		}
	}
	return n
}

// newNamedNS creates /run/netns/name on a locked thread, which it then
// returns to the host namespace.
func (n *testNet) newNamedNS(name string) (netns.NsHandle, error) {
	type result struct {
		h   netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, err}
			return
		}
		defer orig.Close()
		h, err := netns.NewNamed(name)
		if err == nil {
			n.mu.Lock()
			n.namespaces = append(n.namespaces, name)
			n.mu.Unlock()
		}
		if serr := netns.Set(orig); serr != nil {
			// Leave the thread locked: it ends with this goroutine
			// rather than run Go code in the wrong namespace.
			ch <- result{h, fmt.Errorf("returning from %s: %w", name, serr)}
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("creating namespace %s: %w", name, err)
		}
		ch <- result{h, err}
	}()
	r := <-ch
	return r.h, r.err
}

// in runs f on a thread that has joined ns, then returns the thread to the
// host namespace. Sockets and processes f creates stay in ns.
func (n *testNet) in(ns netns.NsHandle, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("joining namespace: %w", err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			ch <- errors.Join(ferr, fmt.Errorf("returning to the host namespace: %w", err))
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		ch <- ferr
	}()
	return <-ch
}

func (n *testNet) closeLater(c io.Closer) {
	n.mu.Lock()
	n.closers = append(n.closers, c)
	n.mu.Unlock()
}

// tunnelProc is the test binary running as a tunnel in a namespace.
type tunnelProc struct {
	name   string
	cmd    *exec.Cmd
	out    *readyWriter
	errOut *lockedBuffer
	done   chan struct{}
}

func (n *testNet) start(t *testing.T, ns netns.NsHandle, c Config) *tunnelProc {
	t.Helper()
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	p := &tunnelProc{
		name:   c.Interface,
		cmd:    exec.Command(os.Args[0]),
		out:    &readyWriter{ready: make(chan struct{})},
		errOut: &lockedBuffer{},
		done:   make(chan struct{}),
	}
	p.cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errOut
	if err := n.in(ns, p.cmd.Start); err != nil {
		t.Fatalf("starting tunnel %s: %v", c.Interface, err)
	}
	n.mu.Lock()
	n.procs = append(n.procs, p)
	n.mu.Unlock()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *tunnelProc) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-p.out.ready:
	case <-p.done:
		t.Fatalf("tunnel %s exited before ready (%v): %s", p.name, p.cmd.ProcessState, p.errOut)
	case <-time.After(readyTimeout):
		t.Fatalf("tunnel %s not ready after %v: %s", p.name, readyTimeout, p.errOut)
	}
}

// stopAndCheck sends SIGTERM, expects exit status 0 and the TUN gone.
func (p *tunnelProc) stopAndCheck(t *testing.T, h *netlink.Handle) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signalling %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("tunnel %s ignored SIGTERM for %v", p.name, stopTimeout)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("tunnel %s exited with %v: %s", p.name, p.cmd.ProcessState, p.errOut)
	} else if s := p.errOut.String(); s != "" {
		t.Logf("tunnel %s stderr: %s", p.name, s)
	}
	var nf netlink.LinkNotFoundError
	if _, err := h.LinkByName(p.name); !errors.As(err, &nf) {
		t.Errorf("TUN %s after its process stopped: %v", p.name, err)
	}
}

// readyWriter is a child's stdout: it closes ready at the line "ready".
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	ready chan struct{}
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes()))
	for sc.Scan() {
		if sc.Text() == "ready" {
			w.once.Do(func() { close(w.ready) })
		}
	}
	return len(b), nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}

// checkTUN checks that Run configured the TUN: up, MTU, address.
func (n *testNet) checkTUN(t *testing.T, h *netlink.Handle, c Config) {
	t.Helper()
	l, err := h.LinkByName(c.Interface)
	if err != nil {
		t.Fatalf("TUN %s: %v", c.Interface, err)
	}
	if l.Type() != "tuntap" {
		t.Errorf("%s is a %s link, want tuntap", c.Interface, l.Type())
	}
	if l.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("%s is down", c.Interface)
	}
	want := c.MTU
	if want == 0 {
		want = DefaultMTU
	}
	if l.Attrs().MTU != want {
		t.Errorf("%s MTU %d, want %d", c.Interface, l.Attrs().MTU, want)
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	wantAddr := netip.MustParsePrefix(c.Address)
	var got []string
	for _, a := range addrs {
		got = append(got, a.IPNet.String())
		if p, err := netip.ParsePrefix(a.IPNet.String()); err == nil && p == wantAddr {
			return
		}
	}
	t.Errorf("%s addresses %v, want %s", c.Interface, got, c.Address)
}

func (n *testNet) stats(t *testing.T, h *netlink.Handle, name string) netlink.LinkStatistics {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	if l.Attrs().Statistics == nil {
		t.Fatalf("%s has no statistics", name)
	}
	return *l.Attrs().Statistics
}

// udpInDatagrams reads Udp InDatagrams in ns: /proc/thread-self, since
// /proc/self/net is the main thread's namespace.
func (n *testNet) udpInDatagrams(t *testing.T, ns netns.NsHandle) uint64 {
	t.Helper()
	var snmp []byte
	if err := n.in(ns, func() (err error) {
		snmp, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, line := range strings.Split(string(snmp), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		for i, name := range header {
			if name == "InDatagrams" && i < len(f) {
				v, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
	}
	t.Fatalf("no Udp InDatagrams in /proc/net/snmp:\n%s", snmp)
	return 0
}

// listen opens a TCP listener on b's tunnel address.
func (n *testNet) listen(t *testing.T) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := n.in(n.nsB, func() (err error) {
		ln, err = net.Listen("tcp4", ip(tunB)+":0")
		return err
	}); err != nil {
		t.Fatalf("listening in %sb: %v", n.id, err)
	}
	n.closeLater(ln)
	return ln
}

// dial connects from namespace a to addr.
func (n *testNet) dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	if err := n.in(n.nsA, func() (err error) {
		c, err = net.DialTimeout("tcp4", addr, 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("connecting from %sa to %s through the tunnel: %v", n.id, addr, err)
	}
	n.closeLater(c)
	return c
}

// transfer sends payload from a to b over the tunnel and checks that
// exactly those bytes arrived. It returns the time from the first byte
// written to the last byte read.
func (n *testNet) transfer(t *testing.T, payload []byte) time.Duration {
	t.Helper()
	ln := n.listen(t)
	type result struct {
		n   int64
		sum [32]byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(transferDeadline))
		h := sha256.New()
		nr, err := io.Copy(h, c)
		var r result
		r.n, r.err = nr, err
		copy(r.sum[:], h.Sum(nil))
		got <- r
	}()
	c := n.dial(t, ln.Addr().String())
	c.SetDeadline(time.Now().Add(transferDeadline))
	start := time.Now()
	if _, err := c.Write(payload); err != nil {
		t.Fatalf("sending through the tunnel: %v", err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	elapsed := time.Since(start)
	if r.err != nil {
		t.Fatalf("receiving through the tunnel: %v (after %d bytes)", r.err, r.n)
	}
	if r.n != int64(len(payload)) || r.sum != sha256.Sum256(payload) {
		t.Fatalf("received %d bytes with sha256 %x, sent %d with %x", r.n, r.sum, len(payload), sha256.Sum256(payload))
	}
	return elapsed
}

// stream sends for d from a to b and returns the bytes b received and the
// time it took.
func (n *testNet) stream(t *testing.T, d time.Duration) (int64, time.Duration) {
	t.Helper()
	ln := n.listen(t)
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(d + transferDeadline))
		nr, _ := io.Copy(io.Discard, c)
		got <- nr
	}()
	c := n.dial(t, ln.Addr().String())
	buf := make([]byte, 128<<10)
	start := time.Now()
	c.SetWriteDeadline(start.Add(d))
	for {
		if _, err := c.Write(buf); err != nil {
			break
		}
	}
	c.(*net.TCPConn).CloseWrite()
	nr := <-got
	return nr, time.Since(start)
}

// capture counts what crosses an interface, through an AF_PACKET socket
// opened in the interface's namespace.
type capture struct {
	fd     int
	eth    bool // frames start with an Ethernet header (veth), else IP (TUN)
	quit   atomic.Bool
	done   chan struct{}
	frames atomic.Int64
	wgUDP  atomic.Int64 // IPv4 UDP to or from the WireGuard port
	tcp    atomic.Int64
	marker atomic.Int64 // frames holding the plaintext marker
	nbytes atomic.Int64 // bytes
}

func (n *testNet) capture(t *testing.T, ns netns.NsHandle, h *netlink.Handle, name string, eth bool) *capture {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{fd: -1, eth: eth, done: make(chan struct{})}
	proto := int(htons(unix.ETH_P_ALL))
	if err := n.in(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		c.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index}); err != nil {
			return err
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20)
		tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}); err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		t.Fatalf("capturing on %s: %v", name, err)
	}
	go c.run()
	t.Cleanup(c.stop)
	return c
}

func (c *capture) run() {
	defer close(c.done)
	buf := make([]byte, 256<<10)
	for !c.quit.Load() {
		nr, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		c.count(buf[:nr])
	}
}

func (c *capture) count(f []byte) {
	c.frames.Add(1)
	c.nbytes.Add(int64(len(f)))
	if bytes.Contains(f, []byte(plaintextMarker)) {
		c.marker.Add(1)
	}
	pkt := f
	if c.eth {
		if len(f) < 14 {
			return
		}
		switch binary.BigEndian.Uint16(f[12:14]) {
		case unix.ETH_P_IP, unix.ETH_P_IPV6:
			pkt = f[14:]
		default:
			return
		}
	}
	if len(pkt) < 1 {
		return
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < 20 {
			return
		}
		ihl := int(pkt[0]&0xf) * 4
		switch pkt[9] {
		case unix.IPPROTO_TCP:
			c.tcp.Add(1)
		case unix.IPPROTO_UDP:
			if len(pkt) >= ihl+4 {
				sport, dport := binary.BigEndian.Uint16(pkt[ihl:]), binary.BigEndian.Uint16(pkt[ihl+2:])
				if sport == port || dport == port {
					c.wgUDP.Add(1)
				}
			}
		}
	case 6:
		if len(pkt) >= 40 && pkt[6] == unix.IPPROTO_TCP {
			c.tcp.Add(1)
		}
	}
}

func (c *capture) stop() {
	if c.quit.Swap(true) {
		return
	}
	<-c.done
	unix.Close(c.fd)
}

func (c *capture) String() string {
	return fmt.Sprintf("%d frames, %d bytes, %d WireGuard UDP, %d TCP, %d with the plaintext marker",
		c.frames.Load(), c.nbytes.Load(), c.wgUDP.Load(), c.tcp.Load(), c.marker.Load())
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// teardown stops leftover processes, closes sockets and handles, deletes
// the veth and the namespaces. It runs once, at the end or on failure.
func (n *testNet) teardown(t *testing.T) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tornDown {
		return
	}
	n.tornDown = true
	for _, p := range n.procs {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	for _, c := range n.closers {
		_ = c.Close()
	}
	if n.hA != nil {
		if l, err := n.hA.LinkByName(n.id + "x"); err == nil {
			if err := n.hA.LinkDel(l); err != nil {
				t.Errorf("deleting veth %sx: %v", n.id, err)
			}
		}
		n.hA.Close()
	}
	if n.hB != nil {
		n.hB.Close()
	}
	for _, h := range []netns.NsHandle{n.nsA, n.nsB} {
		if h.IsOpen() {
			h.Close()
		}
	}
	for _, name := range n.namespaces {
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	}
}

// checkNothingLeft asserts that no link or namespace named with this test's
// prefix remains in the host.
func (n *testNet) checkNothingLeft(t *testing.T) {
	t.Helper()
	ls, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if strings.HasPrefix(l.Attrs().Name, n.id) {
			t.Errorf("link %s left behind", l.Attrs().Name)
		}
	}
	if out, err := exec.Command("ip", "-o", "link").Output(); err == nil && strings.Contains(string(out), n.id) {
		t.Errorf("ip -o link lists %s*:\n%s", n.id, out)
	}
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), n.id) {
			t.Errorf("namespace %s left behind", filepath.Join("/run/netns", e.Name()))
		}
	}
}
