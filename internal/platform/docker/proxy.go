package docker

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// Keys an instance's Seen records of a published port (network
// published): where the engine published it, and the CPU time its
// userland proxy took meanwhile (0 when the engine's NAT carried the
// traffic: the proxy listens, but the kernel's rules reach the container
// first).
const (
	SeenPublished     = "published"
	SeenProxy         = "published.proxy"
	SeenProxyCPU      = "published.proxy_cpu_seconds"
	proxyPollInterval = 100 * time.Millisecond
)

// findProxy is the pid of the engine's userland proxy (docker-proxy) that
// listens on hostIP:hostPort, 0 for none.
func findProxy(hostIP, hostPort string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte("docker-proxy")) {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if argAfter(args, "-host-ip") == hostIP && argAfter(args, "-host-port") == hostPort {
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

// watchProxy follows the CPU time of the proxy behind an instance's
// published port until the instance's output ends (the proxy goes with
// the container, so its last reading is kept), recording it in the
// instance's Seen.
func (in *instance) watchProxy(hostIP, hostPort string) {
	pid := findProxy(hostIP, hostPort)
	in.mu.Lock()
	if in.seen == nil {
		in.seen = map[string]string{}
	}
	in.seen[SeenPublished] = hostIP + ":" + hostPort
	if pid == 0 {
		in.seen[SeenProxy] = "none (the engine runs without its userland proxy, or is not on this machine)"
		in.mu.Unlock()
		return
	}
	in.seen[SeenProxy] = "docker-proxy pid " + strconv.Itoa(pid)
	in.mu.Unlock()
	t := time.NewTicker(proxyPollInterval)
	defer t.Stop()
	for {
		if cpu, ok := sysinfo.ProcCPUSeconds(pid); ok {
			in.mu.Lock()
			in.seen[SeenProxyCPU] = strconv.FormatFloat(cpu, 'f', 2, 64)
			in.mu.Unlock()
		} else {
			return
		}
		select {
		case <-in.done:
			return
		case <-t.C:
		}
	}
}
