package engine

import (
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

// An engine named as Docker's CLI names it: a context is read from the
// CLI's store (its endpoint, its TLS files), an address is taken as it is,
// and a context that does not exist is an error that says where contexts
// live.
func TestEngineOptions(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	tlsDir := testutil.DockerContext(t, dir, "prod", "tcp://manager.example:2376", map[string][]byte{"ca.pem": []byte("x")})
	host, tls, _, err := contextEndpoint("prod")
	if err != nil || host != "tcp://manager.example:2376" || tls != tlsDir {
		t.Errorf("context prod: %q %q %v", host, tls, err)
	}
	if ep, err := engineOptions(platform.Engine{Context: "prod"}); err != nil || !strings.Contains(ep.desc, "tcp://manager.example:2376 (context prod)") || !ep.tls {
		t.Errorf("engine from context: %q (TLS %v) %v", ep.desc, ep.tls, err)
	}
	if _, err := engineOptions(platform.Engine{Context: "staging"}); err == nil || !strings.Contains(err.Error(), "docker context ls") {
		t.Errorf("a missing context: %v", err)
	}
	if ep, err := engineOptions(platform.Engine{Host: "unix:///run/other.sock"}); err != nil || ep.desc != "unix:///run/other.sock" || ep.tls {
		t.Errorf("an address: %q (TLS %v) %v", ep.desc, ep.tls, err)
	}
	// A context that turns verification off is honoured, with a warning
	// naming it; with verification on there is none.
	testutil.DockerContextSkipVerify(t, dir, "lab", "tcp://lab.example:2376", map[string][]byte{"ca.pem": []byte("x")})
	if _, _, skip, err := contextEndpoint("lab"); err != nil || !skip {
		t.Errorf("context lab: skip %v, %v", skip, err)
	}
	if ep, err := engineOptions(platform.Engine{Context: "lab"}); err != nil || !strings.Contains(ep.warning, "SkipTLSVerify") || !ep.tls {
		t.Errorf("a context without verification: warning %q, TLS %v, %v", ep.warning, ep.tls, err)
	}
	if ep, _ := engineOptions(platform.Engine{Context: "prod"}); ep.warning != "" {
		t.Errorf("a verified context warns: %q", ep.warning)
	}
	// --tlsverify alone takes the files of $DOCKER_CERT_PATH, as the CLI.
	if ep, err := engineOptions(platform.Engine{Host: "tcp://manager.example:2376", TLSVerify: true}); err != nil || !ep.tls {
		t.Errorf("--tlsverify: TLS %v, %v", ep.tls, err)
	}
}

// The machine's engine is the only one the docker platform drives: a
// remote address in DOCKER_HOST (as --docker-host sets it for a swarm) is
// refused with the reason, a unix socket is not.
func TestLocalEngine(t *testing.T) {
	for host, ok := range map[string]bool{"": true, "unix:///var/run/docker.sock": true, "tcp://manager:2376": false, "ssh://me@manager": false} {
		t.Setenv("DOCKER_HOST", host)
		if err := LocalEngine(); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "platform swarm")) {
			t.Errorf("DOCKER_HOST=%q: %v", host, err)
		}
	}
	// A context naming a remote engine (as --context sets it) is remote too.
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	testutil.DockerContext(t, dir, "remote", "tcp://manager:2376", nil)
	t.Setenv("DOCKER_CONTEXT", "remote")
	if err := LocalEngine(); err == nil || !strings.Contains(err.Error(), "tcp://manager:2376") {
		t.Errorf("DOCKER_CONTEXT=remote: %v", err)
	}
}
