package image

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctrbench/ctrbench/internal/userimage"
)

// TestWriteArchive: the archive is an image go-containerregistry reads as
// `docker save`'s (through userimage, its one reader here): the context's
// tag, the Dockerfile's entrypoint and PATH, and the same files — the
// binary byte for byte, a tool's library, /etc/passwd. Written twice it is
// the same bytes.
func TestWriteArchive(t *testing.T) {
	bin := staticBinary(t)
	c, err := Plan(Input{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := c.WriteArchive(&a); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of one context differ")
	}
	path := filepath.Join(t.TempDir(), "agent.tar")
	if err := os.WriteFile(path, a.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := userimage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if tags := img.RepoTags(); len(tags) != 1 || tags[0] != c.Tag && tags[0] != "docker.io/library/"+c.Tag {
		t.Errorf("tags %v, want %s", tags, c.Tag)
	}
	cfg := img.Config()
	if !slices.Equal(cfg.Entrypoint, []string{BinaryPath}) || !slices.Contains(cfg.Env, imagePath) || cfg.OS != "linux" {
		t.Errorf("config %+v: want entrypoint %s, %s, linux", cfg, BinaryPath, imagePath)
	}
	dir := t.TempDir()
	if _, err := img.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(filepath.Join(dir, BinaryPath))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the unpacked %s is not the binary (%d bytes, want %d; %v)", BinaryPath, len(got), len(want), err)
	}
	if st, err := os.Stat(filepath.Join(dir, BinaryPath)); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable: %v %v", BinaryPath, st.Mode(), err)
	}
	if p, err := os.ReadFile(filepath.Join(dir, "etc/passwd")); err != nil || !bytes.HasPrefix(p, []byte("root:")) {
		t.Errorf("/etc/passwd %q (%v)", p, err)
	}
}
