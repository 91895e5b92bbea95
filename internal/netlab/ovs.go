package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/subnets"
)

// macvlanHostIP is the machine-wide (root namespace) macvlan subnet's
// host side (OVS's is ovsAddr(0, 1)).
func (l *Lab) macvlanHostIP() string { return l.pool.IP4(subnets.Macvlan, 1) }

// Open vSwitch control. There is no better interface than its tools.
const (
	ovsCtl       = "/usr/share/openvswitch/scripts/ovs-ctl"
	ovsPidFile   = "/run/openvswitch/ovs-vswitchd.pid"
	ovsDBSock    = "/run/openvswitch/db.sock"
	ovsTimeout   = "--timeout=10"
	ovsAppear    = 5 * time.Second
	ovsStartedBy = "/run/ctbnetlab-ovs-started" // pid of the ovs-vswitchd a lab started
)

func ovsVsctl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ovs-vsctl", args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ovs-vsctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// ovsRunning reports whether ovsdb-server answers.
func ovsRunning(ctx context.Context) bool {
	_, err := ovsVsctl(ctx, "--timeout=3", "show")
	return err == nil
}

func ovsListBridges(ctx context.Context) ([]string, error) {
	out, err := ovsVsctl(ctx, ovsTimeout, "list-br")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// ovsDelBridge deletes a bridge, and tries once more with a longer wait
// when Open vSwitch is slow to answer (a busy machine): a bridge left in
// its database comes back each time it starts.
func ovsDelBridge(ctx context.Context, name string) error {
	_, err := ovsVsctl(ctx, ovsTimeout, "--if-exists", "del-br", name)
	if err != nil && ctx.Err() == nil {
		_, err = ovsVsctl(ctx, "--timeout=30", "--if-exists", "del-br", name)
	}
	return err
}

// ovsDBUp reports whether ovsdb-server is up by its socket, which it
// removes when it stops: unlike ovsRunning it does not need an answer
// within seconds, so a busy machine cannot make a clean-up skip its
// bridges.
func ovsDBUp() bool {
	_, err := os.Stat(ovsDBSock)
	return err == nil
}

// startOVS starts the Open vSwitch daemons and records (in ovsStartedBy)
// that a lab did, so the last Close, or Clean after a crash, stops them.
func startOVS(ctx context.Context) error {
	if _, err := os.Stat(ovsCtl); err != nil {
		return fmt.Errorf("the Open vSwitch tools are not installed (%s): %w", ovsCtl, err)
	}
	out, err := exec.CommandContext(ctx, ovsCtl, "start", "--system-id=random").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovs-ctl start: %w: %s", err, strings.TrimSpace(string(out)))
	}
	pid, err := os.ReadFile(ovsPidFile)
	if err != nil {
		return fmt.Errorf("ovs-ctl start: no %s: %w", ovsPidFile, err)
	}
	if err := os.WriteFile(ovsStartedBy, bytes.TrimSpace(pid), 0o644); err != nil {
		return fmt.Errorf("recording that ctrbench started Open vSwitch: %w", err)
	}
	return nil
}

// maybeStopOVS stops Open vSwitch if a lab started this very ovs-vswitchd
// and no bridge of anyone's is left on it.
func maybeStopOVS(ctx context.Context) (bool, error) {
	mark, err := os.ReadFile(ovsStartedBy)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("reading %s: %w", ovsStartedBy, err)
	}
	pid, err := os.ReadFile(ovsPidFile)
	if err != nil || !bytes.Equal(bytes.TrimSpace(pid), bytes.TrimSpace(mark)) {
		// Stopped or restarted by someone else since: not ours any more.
		return false, os.Remove(ovsStartedBy)
	}
	brs, err := ovsListBridges(ctx)
	if err != nil {
		return false, err
	}
	if len(brs) > 0 {
		return false, nil
	}
	if out, err := exec.CommandContext(ctx, ovsCtl, "stop").CombinedOutput(); err != nil {
		return false, fmt.Errorf("ovs-ctl stop: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return true, os.Remove(ovsStartedBy)
}

// buildOVS creates the OVS bridge and addresses its internal port.
func (l *Lab) buildOVS(ctx context.Context) error {
	if !ovsRunning(ctx) {
		if err := startOVS(ctx); err != nil {
			return fmt.Errorf("netlab: ovs: %w", err)
		}
		l.setInfo("ovs.started", "true")
		l.notef("started Open vSwitch")
	} else {
		l.setInfo("ovs.started", "false")
	}
	datapath := "netdev"
	if _, err := os.Stat("/sys/module/openvswitch"); err == nil {
		datapath = "system"
	}
	br := l.ovsName()
	l.mu.Lock()
	l.ovsBridge = br // from here on Close deletes it
	l.mu.Unlock()
	if _, err := ovsVsctl(ctx, ovsTimeout, "add-br", br, "--", "set", "bridge", br, "datapath_type="+datapath); err != nil {
		return fmt.Errorf("netlab: ovs: %w", err)
	}
	link, err := waitLink(ctx, br, ovsAppear)
	if err != nil {
		return fmt.Errorf("netlab: ovs: internal port: %w", err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: l.ovsHostAddr(0), Mask: net.CIDRMask(24, 32)}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("netlab: ovs: adding %s to %s: %w", addr, br, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("netlab: ovs: bringing up %s: %w", br, err)
	}
	l.setInfo("ovs.datapath", datapath)
	if v, err := ovsVsctl(ctx, "--timeout=3", "--version"); err == nil {
		first, _, _ := strings.Cut(v, "\n")
		if f := strings.Fields(first); len(f) > 0 {
			l.setInfo("ovs.version", f[len(f)-1]) // "ovs-vsctl (Open vSwitch) 3.1.0"
		}
	}
	l.notef("ovs: bridge %s (datapath %s) with %s/24", br, datapath, l.ovsAddr(0, 1))
	return nil
}

func (l *Lab) ovsName() string { return "ctb" + l.tok + "s" }

// waitLink polls the root namespace until link name exists.
func waitLink(ctx context.Context, name string, timeout time.Duration) (netlink.Link, error) {
	deadline := time.Now().Add(timeout)
	for {
		lk, err := netlink.LinkByName(name)
		if err == nil {
			return lk, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not appear within %v: %w", name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// buildMacvlan creates ctrbench's own parent veth pair and the machine's
// macvlan child.
func (l *Lab) buildMacvlan(ctx context.Context) error {
	parent, peer := l.macvlanParent(), "ctb"+l.tok+"n"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: parent}, PeerName: peer}); err != nil {
		return fmt.Errorf("netlab: macvlan: creating parent pair %s/%s: %w", parent, peer, err)
	}
	for _, n := range []string{parent, peer} {
		if err := setUp(rootNL, n, nil); err != nil {
			return fmt.Errorf("netlab: macvlan: %w", err)
		}
	}
	p, err := netlink.LinkByName(parent)
	if err != nil {
		return fmt.Errorf("netlab: macvlan: %w", err)
	}
	ip := net.ParseIP(l.macvlanHostIP()).To4()
	child := "ctb" + l.tok + "mh"
	mv := &netlink.Macvlan{
		LinkAttrs: netlink.LinkAttrs{Name: child, ParentIndex: p.Attrs().Index, HardwareAddr: macFor(ip)},
		Mode:      netlink.MACVLAN_MODE_BRIDGE,
	}
	if err := netlink.LinkAdd(mv); err != nil {
		return fmt.Errorf("netlab: macvlan: creating %s: %w", child, err)
	}
	if err := setUp(rootNL, child, &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}); err != nil {
		return fmt.Errorf("netlab: macvlan: %w", err)
	}
	l.setInfo("macvlan.parent", parent+" (veth)")
	l.notef("macvlan: parent %s (veth), host child %s with %s/24", parent, child, l.macvlanHostIP())
	return nil
}

func (l *Lab) macvlanParent() string { return "ctb" + l.tok + "m" }

// Legacy ethtool ioctl (SIOCETHTOOL), as ethtool -K uses on old kernels.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with its union holding a pointer; data is an
// unsafe.Pointer so the collector sees it.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// checksumOffloadOff turns off tx and rx checksum offload on the
// root-namespace link name (ethtool -K name tx off rx off).
func checksumOffloadOff(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{unix.ETHTOOL_STXCSUM, unix.ETHTOOL_SRXCSUM} {
		v := ethtoolValue{cmd: cmd}
		ifr := ifreqData{data: unsafe.Pointer(&v)}
		copy(ifr.name[:unix.IFNAMSIZ-1], name)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return fmt.Errorf("ethtool %#x on %s: %w", cmd, name, errno)
		}
	}
	return nil
}
