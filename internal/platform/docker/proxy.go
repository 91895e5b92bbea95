package docker

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// Keys an instance's Seen records of a published port (network
// published): where the engine published it, and the CPU time its
// userland proxy took meanwhile (0 when the engine's NAT carried the
// traffic: the proxy listens, but the kernel's rules reach the container
// first).
const (
	SeenPublished = "published"
	// SeenPublishedPorts lists every port published, when more than the
	// agent's: "6379/tcp=HOST:PORT,…".
	SeenPublishedPorts = "published.ports"
	SeenProxy          = "published.proxy"
	SeenProxyCPU       = "published.proxy_cpu_seconds"
	proxyPollInterval  = 100 * time.Millisecond
)

// sharePortNumbers gives a container port published on two protocols one
// host port, free on both, that the engine then takes (it chooses each
// apart otherwise): iperf3's client sends its UDP datagrams to its TCP
// port's number.
func sharePortNumbers(bs []engine.PortBinding) error {
	protos := map[int]int{}
	for _, b := range bs {
		protos[b.Port]++
	}
	chosen := map[int]int{}
	for i, b := range bs {
		if protos[b.Port] < 2 {
			continue
		}
		if _, ok := chosen[b.Port]; !ok {
			p, err := freeOnBoth(b.HostIP)
			if err != nil {
				return fmt.Errorf("a port for %d on tcp and udp: %w", b.Port, err)
			}
			chosen[b.Port] = p
		}
		bs[i].HostPort = chosen[b.Port]
	}
	return nil
}

// freeOnBoth is a port of ip free for TCP and for UDP at once.
func freeOnBoth(ip string) (int, error) {
	for range 20 {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
		ln.Close()
		if err == nil {
			pc.Close()
			return port, nil
		}
	}
	return 0, errors.New("none found in 20 tries")
}

// findProxy is the pid of the engine's userland proxy (docker-proxy) that
// listens on hostIP:hostPort for proto, 0 for none.
func findProxy(hostIP, hostPort, proto string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte("docker-proxy")) {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if argAfter(args, "-host-ip") == hostIP && argAfter(args, "-host-port") == hostPort && argAfter(args, "-proto") == proto {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}

func argAfter(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// watchProxies follows the CPU time of the proxies behind an instance's
// published ports ("PORT/PROTO" → "HOST:PORT"), summed, until the
// instance's output ends (the proxies go with the container, so their
// last readings are kept), recording it in the instance's Seen with where
// the agent's port was published (and, with more, every port).
func (in *instance) watchProxies(bound map[string]string) {
	var pids []int
	var names, all []string
	for _, key := range slices.Sorted(maps.Keys(bound)) {
		all = append(all, key+"="+bound[key])
		host, port, err := net.SplitHostPort(bound[key])
		if err != nil {
			continue
		}
		_, proto, _ := strings.Cut(key, "/")
		if pid := findProxy(host, port, proto); pid != 0 {
			pids = append(pids, pid)
			names = append(names, strconv.Itoa(pid))
		}
	}
	in.mu.Lock()
	if in.seen == nil {
		in.seen = map[string]string{}
	}
	in.seen[SeenPublished] = in.Published()
	if len(bound) > 1 {
		in.seen[SeenPublishedPorts] = strings.Join(all, ",")
	}
	if len(pids) == 0 {
		in.seen[SeenProxy] = "none (the engine runs without its userland proxy, or is not on this machine)"
		in.mu.Unlock()
		return
	}
	in.seen[SeenProxy] = "docker-proxy pid " + strings.Join(names, ", ")
	in.mu.Unlock()
	t := time.NewTicker(proxyPollInterval)
	defer t.Stop()
	last := make([]float64, len(pids))
	for {
		gone := 0
		for i, pid := range pids {
			if cpu, ok := sysinfo.ProcCPUSeconds(pid); ok {
				last[i] = cpu
			} else {
				gone++
			}
		}
		var sum float64
		for _, c := range last {
			sum += c
		}
		in.mu.Lock()
		in.seen[SeenProxyCPU] = strconv.FormatFloat(sum, 'f', 2, 64)
		in.mu.Unlock()
		if gone == len(pids) {
			return
		}
		select {
		case <-in.done:
			return
		case <-t.C:
		}
	}
}
