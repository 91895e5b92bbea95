package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// WriteArchive writes the image itself, with no engine, as the archive
// `docker save` writes (manifest.json, the config, one layer of the
// image's filesystem) and `docker load`, `ctr images import` and podman
// read: for a platform whose nodes have a containerd and no Docker (a
// Kubernetes node). It is the image the Dockerfile of WriteTar builds —
// the same files, PATH and entrypoint — tagged c.Tag; the output is
// byte-identical for the same Context.
func (c *Context) WriteArchive(w io.Writer) error {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	for _, f := range c.Files {
		name := f.Path[1:]
		if f.Mode.IsDir() {
			name += "/"
		}
		if err := writeEntry(lw, name, f.Mode, f.Data); err != nil {
			return err
		}
	}
	if err := lw.Close(); err != nil {
		return fmt.Errorf("writing the image's layer: %w", err)
	}
	diff := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(imageConfig{
		Architecture: "amd64", OS: "linux",
		Config: runConfig{Env: []string{imagePath}, Entrypoint: []string{BinaryPath}},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{"sha256:" + hex.EncodeToString(diff[:])}},
	})
	if err != nil {
		return err
	}
	cdig := sha256.Sum256(config)
	configName := hex.EncodeToString(cdig[:]) + ".json"
	manifest, err := json.Marshal([]archiveManifest{{Config: configName, RepoTags: []string{c.Tag}, Layers: []string{"layer.tar"}}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{{configName, config}, {"layer.tar", layer.Bytes()}, {"manifest.json", manifest}} {
		if err := writeEntry(tw, e.name, 0o644, e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the image archive: %w", err)
	}
	return nil
}

// imagePath is the PATH the image's processes get (the Dockerfile's ENV).
const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// The parts of an image config and a docker save manifest WriteArchive
// writes.
type (
	imageConfig struct {
		Architecture string    `json:"architecture"`
		OS           string    `json:"os"`
		Config       runConfig `json:"config"`
		RootFS       rootFS    `json:"rootfs"`
	}
	runConfig struct {
		Env        []string `json:"Env"`
		Entrypoint []string `json:"Entrypoint"`
	}
	rootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
	archiveManifest struct {
		Config   string   `json:"Config"`
		RepoTags []string `json:"RepoTags"`
		Layers   []string `json:"Layers"`
	}
)
