package userimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// AgentRepository is the repository of the images that put ctrbench's
// agent into a user's image (as image.UserRepository names them in an
// engine).
const AgentRepository = "docker.io/library/ctrbench-user"

// AgentRef is the reference of the image WriteWithAgent writes for this
// image and the ctrbench binary at binary: its tag is a hash of the image's
// digest and the binary's content, so the same pair is the same image.
func (im *Image) AgentRef(binary string) (string, error) {
	b, err := os.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("reading the agent binary: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(im.digest))
	h.Write(b)
	return AgentRepository + ":" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// WriteWithAgent writes to w, as a `docker save` archive naming it ref,
// the image with ctrbench's agent put into it: one more layer holding the
// static binary at binary as path (mode 0755), which becomes its
// entrypoint, with no CMD. Everything else — the user's files,
// environment, working directory and user — is the image's; its own
// command is Config().Command's, for the agent to run.
func (im *Image) WriteWithAgent(w io.Writer, ref, binary, path string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	layerTar, err := fileLayer(binary, path)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return fmt.Errorf("the agent's layer: %w", err)
	}
	img, err := mutate.Append(im.img, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "ctrbench: the agent at " + path, Comment: "ctrbench"}})
	if err != nil {
		return fmt.Errorf("adding the agent to %s: %w", im.source, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("the configuration of %s: %w", im.source, err)
	}
	cfg := *cf.Config.DeepCopy()
	cfg.Entrypoint, cfg.Cmd = []string{path}, nil
	if img, err = mutate.Config(img, cfg); err != nil {
		return fmt.Errorf("setting the agent as the entrypoint of %s: %w", im.source, err)
	}
	if err := tarball.Write(tag, img, w); err != nil {
		return fmt.Errorf("writing %s: %w", ref, err)
	}
	return nil
}

// fileLayer is an uncompressed layer holding the file at src as path,
// executable, with its parent directories.
func fileLayer(src, path string) ([]byte, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("reading the agent binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	rel := strings.TrimPrefix(path, "/")
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/") + "/"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o755, Size: int64(len(data))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
