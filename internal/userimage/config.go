package userimage

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DefaultPath is the PATH a container runs with when its image sets none,
// as Docker and runc give it.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Config is what an image says about running it: its configuration's
// Config section and platform.
type Config struct {
	Entrypoint   []string // ENTRYPOINT, exec form
	Cmd          []string // CMD: the entrypoint's arguments, or the command when there is no entrypoint
	Env          []string // NAME=value, in the image's order
	WorkingDir   string   // "" means /
	User         string   // user[:group], names or numbers; "" means root
	ExposedPorts []Port   // EXPOSE, ordered by number then protocol
	OS           string   // "linux"
	Architecture string   // "amd64", "arm64", …
	Variant      string   // "v8" for some arm64 images; usually ""
}

// Port is a port an image declares it listens on (EXPOSE).
type Port struct {
	Number   int
	Protocol string // "tcp", "udp" or "sctp"
}

// String is the port as Docker writes it, "80/tcp".
func (p Port) String() string { return strconv.Itoa(p.Number) + "/" + p.Protocol }

func configOf(cf *v1.ConfigFile) (Config, error) {
	c := Config{
		Entrypoint:   cf.Config.Entrypoint,
		Cmd:          cf.Config.Cmd,
		Env:          cf.Config.Env,
		WorkingDir:   cf.Config.WorkingDir,
		User:         cf.Config.User,
		OS:           cf.OS,
		Architecture: cf.Architecture,
		Variant:      cf.Variant,
	}
	for k := range cf.Config.ExposedPorts {
		ports, err := parsePorts(k)
		if err != nil {
			return Config{}, err
		}
		c.ExposedPorts = append(c.ExposedPorts, ports...)
	}
	slices.SortFunc(c.ExposedPorts, func(a, b Port) int {
		if a.Number != b.Number {
			return a.Number - b.Number
		}
		return strings.Compare(a.Protocol, b.Protocol)
	})
	c.ExposedPorts = slices.Compact(c.ExposedPorts)
	return c, nil
}

// parsePorts reads an exposed port as Docker writes it: "80/tcp",
// "53/udp", "8080" (TCP), or a range "8000-8002/tcp".
func parsePorts(s string) ([]Port, error) {
	num, proto, _ := strings.Cut(s, "/")
	if proto == "" {
		proto = "tcp"
	}
	proto = strings.ToLower(proto)
	bad := fmt.Errorf("exposed port %q is not PORT[/PROTOCOL] or FIRST-LAST[/PROTOCOL] with ports 1-65535 and protocol tcp, udp or sctp", s)
	if proto != "tcp" && proto != "udp" && proto != "sctp" {
		return nil, bad
	}
	lo, hi, isRange := strings.Cut(num, "-")
	first, err := strconv.Atoi(lo)
	if err != nil {
		return nil, bad
	}
	last := first
	if isRange {
		if last, err = strconv.Atoi(hi); err != nil {
			return nil, bad
		}
	}
	if first < 1 || last > 65535 || last < first {
		return nil, bad
	}
	ports := make([]Port, 0, last-first+1)
	for n := first; n <= last; n++ {
		ports = append(ports, Port{Number: n, Protocol: proto})
	}
	return ports, nil
}

func (c Config) clone() Config {
	c.Entrypoint = slices.Clone(c.Entrypoint)
	c.Cmd = slices.Clone(c.Cmd)
	c.Env = slices.Clone(c.Env)
	c.ExposedPorts = slices.Clone(c.ExposedPorts)
	return c
}

// getenv is the value the image gives the environment variable key, and
// whether it sets it.
func (c Config) getenv(key string) (string, bool) {
	// The last setting wins, as in a process's environment.
	for _, kv := range slices.Backward(c.Env) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Path is the PATH a container of the image runs with: the image's, or
// DefaultPath when it sets none.
func (c Config) Path() string {
	if p, ok := c.getenv("PATH"); ok {
		return p
	}
	return DefaultPath
}

// ErrNoCommand is what Command returns for an image that says nothing to
// run when the experiment says nothing either.
var ErrNoCommand = errors.New("the image has neither ENTRYPOINT nor CMD: give the command to run (command:)")

// Command is what a container of the image runs. ctrbench's `command:`
// replaces both the image's ENTRYPOINT and its CMD, as a Kubernetes
// container's command does (without args): when command is given it is
// run as it is, so what an experiment file says is all that runs. Without
// it, ENTRYPOINT followed by CMD runs, as `docker run IMAGE` runs.
func (c Config) Command(command []string) ([]string, error) {
	if len(command) > 0 {
		return slices.Clone(command), nil
	}
	argv := append(slices.Clone(c.Entrypoint), c.Cmd...)
	if len(argv) == 0 {
		return nil, ErrNoCommand
	}
	return argv, nil
}
