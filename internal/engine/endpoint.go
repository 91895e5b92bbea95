package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/client"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// endpoint is how to reach an engine: the client options, a description
// for messages, and whether the connection uses TLS.
type endpoint struct {
	opts []client.Opt
	desc string
	tls  bool
	// warning is for the user: the context turned TLS verification off.
	warning string
}

// engineOptions turns an engine's name into client options: --host and
// the TLS files, else the CLI context (its endpoint and TLS material from
// the CLI's context store), else the environment (DOCKER_HOST,
// DOCKER_TLS_VERIFY, DOCKER_CERT_PATH).
func engineOptions(e platform.Engine) (endpoint, error) {
	if e.Host == "" && e.Context != "" && e.Context != "default" {
		host, tlsDir, skip, err := contextEndpoint(e.Context)
		if err != nil {
			return endpoint{}, err
		}
		ep := endpoint{opts: []client.Opt{client.WithHost(host)}, desc: host + " (context " + e.Context + ")"}
		if tlsDir != "" {
			ep.opts = append(ep.opts, client.WithTLSClientConfig(filepath.Join(tlsDir, "ca.pem"), filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem")))
			ep.tls = true
			if skip {
				// Only the user's explicit word turns verification off,
				// and ctrbench says so.
				ep.opts = append(ep.opts, skipVerify)
				ep.warning = fmt.Sprintf("the Docker context %q turns TLS verification off (SkipTLSVerify): ctrbench talks to %s without checking its certificate, as the context asks, so whoever is on the path could pose as the engine", e.Context, host)
			}
		}
		return ep, nil
	}
	if e.Host == "" {
		host := os.Getenv("DOCKER_HOST")
		if host == "" {
			host = client.DefaultDockerHost
		}
		return endpoint{opts: []client.Opt{client.FromEnv}, desc: host, tls: os.Getenv("DOCKER_TLS_VERIFY") != ""}, nil
	}
	ep := endpoint{opts: []client.Opt{client.WithHost(e.Host)}, desc: e.Host}
	if e.TLSVerify && e.TLSCACert == "" && e.TLSCert == "" && e.TLSKey == "" {
		// As Docker's CLI: the files in $DOCKER_CERT_PATH, else ~/.docker.
		dir := os.Getenv("DOCKER_CERT_PATH")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".docker")
		}
		e.TLSCACert, e.TLSCert, e.TLSKey = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	}
	if e.TLSVerify || e.TLSCACert != "" || e.TLSCert != "" || e.TLSKey != "" {
		ep.opts = append(ep.opts, client.WithTLSClientConfig(e.TLSCACert, e.TLSCert, e.TLSKey))
		ep.tls = true
	}
	return ep, nil
}

// skipVerify turns off the verification of the engine's certificate on
// a client whose TLS is configured (the transport is shared with the copy
// HTTPClient returns).
func skipVerify(c *client.Client) error {
	tr, ok := c.HTTPClient().Transport.(*http.Transport)
	if !ok || tr.TLSClientConfig == nil {
		return fmt.Errorf("cannot turn TLS verification off on a %T", c.HTTPClient().Transport)
	}
	tr.TLSClientConfig.InsecureSkipVerify = true
	return nil
}

// contextEndpoint reads a Docker CLI context: its engine endpoint, the
// directory of its TLS files ("" without TLS) and whether the context
// turns verification off (SkipTLSVerify), from the CLI's store
// ($DOCKER_CONFIG or ~/.docker, contexts/meta/<sha256 of the name>).
func contextEndpoint(name string) (host, tlsDir string, skip bool, err error) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".docker")
	}
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	b, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", id, "meta.json"))
	if err != nil {
		return "", "", false, fmt.Errorf("docker context %q: %w (contexts live in %s/contexts; `docker context ls` lists them)", name, err, dir)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string
			SkipTLSVerify bool
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return "", "", false, fmt.Errorf("docker context %q: %w", name, err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return "", "", false, fmt.Errorf("docker context %q has no docker endpoint", name)
	}
	t := filepath.Join(dir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(filepath.Join(t, "ca.pem")); err != nil {
		t = ""
	}
	return ep.Host, t, ep.SkipTLSVerify, nil
}

// LocalEngine says why the engine the environment names cannot be driven
// as this machine's: the docker, nested and podman platforms enter their
// containers' namespaces and cgroups here, so a remote engine
// (DOCKER_HOST=tcp://…, as --docker-host sets for a user's swarm) is for
// the swarm platform only.
func LocalEngine() error {
	h := os.Getenv("DOCKER_HOST")
	if c := os.Getenv("DOCKER_CONTEXT"); h == "" && c != "" && c != "default" {
		if host, _, _, err := contextEndpoint(c); err == nil {
			h = host
		}
	}
	if h == "" || strings.HasPrefix(h, "unix://") {
		return nil
	}
	return fmt.Errorf("the docker engine at %s is not this machine's: platforms docker, nested and podman drive the engine here (its containers' namespaces and cgroups are entered from this machine); a remote engine is for platform swarm", h)
}
