package userimage

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteWithAgent: the image written with the agent is the user's image
// and one more layer — the agent binary at its path, executable, as the
// entrypoint with no CMD — named by AgentRef, which changes with the
// binary; the user's files, environment and working directory are kept,
// and reading it back (as containerd's import or docker load would) finds
// the binary where the entrypoint says.
func TestWriteWithAgent(t *testing.T) {
	im := mustOpen(t, writeTarball(t, baseImage(t), "example.test/app:1"))
	bin := filepath.Join(t.TempDir(), "ctrbench")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	ref, err := im.AgentRef(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, AgentRepository+":") {
		t.Errorf("ref %s, want one of %s", ref, AgentRepository)
	}
	out := filepath.Join(t.TempDir(), "derived.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.WriteWithAgent(f, ref, bin, "/ctrbench"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d := mustOpen(t, out)
	if tags := d.RepoTags(); !slices.Contains(tags, ref) {
		t.Errorf("derived image's tags %v, want %s", tags, ref)
	}
	cfg, orig := d.Config(), im.Config()
	if !slices.Equal(cfg.Entrypoint, []string{"/ctrbench"}) || len(cfg.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want the agent alone", cfg.Entrypoint, cfg.Cmd)
	}
	if !slices.Equal(cfg.Env, orig.Env) || cfg.WorkingDir != orig.WorkingDir || cfg.User != orig.User {
		t.Errorf("config %+v, want the user's env, working directory and user of %+v", cfg, orig)
	}
	if p, err := d.LookPath("/ctrbench", ""); err != nil || p != "/ctrbench" {
		t.Errorf("the agent in the derived image: %q, %v", p, err)
	}
	if p, err := d.LookPath("app", "/usr/bin"); err != nil || p != "/usr/bin/app" {
		t.Errorf("the user's app in the derived image: %q, %v", p, err)
	}
	dir := t.TempDir()
	if _, err := d.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "ctrbench"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("unpacked agent: %v, %v; want mode 0755", st, err)
	}
	if err := os.WriteFile(bin, []byte("\x7fELF another"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ref2, _ := im.AgentRef(bin); ref2 == ref {
		t.Errorf("another binary, the same ref %s", ref)
	}
}
