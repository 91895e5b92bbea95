package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// DockerContext writes a context of Docker's CLI into the store under
// dir (what DOCKER_CONFIG names), as `docker context create NAME --docker
// host=HOST,ca=…,cert=…,key=…` does: contexts/meta/<sha256 of the
// name>/meta.json and the TLS files (name → content, e.g. ca.pem) under
// contexts/tls/<sha256>/docker. It returns that TLS directory ("" without
// files).
func DockerContext(t *testing.T, dir, name, host string, tlsFiles map[string][]byte) string {
	t.Helper()
	return dockerContext(t, dir, name, host, tlsFiles, false)
}

// DockerContextSkipVerify is DockerContext with TLS verification turned
// off (`docker context create … --docker skip-tls-verify=true`).
func DockerContextSkipVerify(t *testing.T, dir, name, host string, tlsFiles map[string][]byte) string {
	t.Helper()
	return dockerContext(t, dir, name, host, tlsFiles, true)
}

func dockerContext(t *testing.T, dir, name, host string, tlsFiles map[string][]byte, skip bool) string {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	meta := filepath.Join(dir, "contexts", "meta", id)
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{
		"Name":      name,
		"Metadata":  map[string]any{},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": skip}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if len(tlsFiles) == 0 {
		return ""
	}
	tlsDir := filepath.Join(dir, "contexts", "tls", id, "docker")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for f, content := range tlsFiles {
		if err := os.WriteFile(filepath.Join(tlsDir, f), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return tlsDir
}
