package workloads

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// The kernel's socket tables of the caller's network namespace, as
// /proc/self/net/{tcp,udp}[6] list them: how net.sockperf sees, without
// touching sockperf's sockets, when sockperf listens and when it has taken
// in everything its client sent.

// TCP states in the st column.
const (
	tcpEstablished = "01"
	tcpCloseWait   = "08"
	tcpListen      = "0A"
)

// procSock is one row: a socket's local address, state and receive queue.
type procSock struct {
	IP      net.IP
	Port    int
	State   string
	RxQueue uint64
}

// procNetSockets lists the sockets of proto ("tcp" or "udp"), IPv4 and IPv6.
func procNetSockets(proto string) ([]procSock, error) {
	var all []procSock
	for _, f := range []string{proto, proto + "6"} {
		fh, err := os.Open("/proc/self/net/" + f)
		if err != nil {
			if os.IsNotExist(err) && f != proto { // no IPv6 in this namespace
				continue
			}
			return nil, fmt.Errorf("reading the socket table: %w", err)
		}
		socks, err := parseProcNet(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("/proc/self/net/%s: %w", f, err)
		}
		all = append(all, socks...)
	}
	return all, nil
}

// parseProcNet reads one table: a header line, then rows of
// "sl local_address rem_address st tx_queue:rx_queue …", addresses as
// hex IP (32-bit words in host byte order) ":" hex port.
func parseProcNet(r io.Reader) ([]procSock, error) {
	sc := bufio.NewScanner(r)
	var out []procSock
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 5 {
			continue
		}
		ipHex, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("local address %q", f[1])
		}
		ip, err := procIP(ipHex)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", portHex, err)
		}
		_, rxHex, _ := strings.Cut(f[4], ":")
		rx, err := strconv.ParseUint(rxHex, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("queues %q: %w", f[4], err)
		}
		out = append(out, procSock{IP: ip, Port: int(port), State: f[3], RxQueue: rx})
	}
	return out, sc.Err()
}

// procIP decodes the kernel's hex address: each 32-bit word is printed as
// a number in host byte order, little-endian on the machines ctrbench runs
// on (amd64, arm64).
func procIP(h string) (net.IP, error) {
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, fmt.Errorf("address %q", h)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b), nil
}

// socketsOn filters socks to those bound to port on ip (or on the wildcard
// address, which covers ip).
func socketsOn(socks []procSock, ip net.IP, port int) []procSock {
	var out []procSock
	for _, s := range socks {
		if s.Port == port && (s.IP.Equal(ip) || s.IP.IsUnspecified() || ip.IsUnspecified()) {
			out = append(out, s)
		}
	}
	return out
}
