package userimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The archives of these tests are made with go-containerregistry itself,
// from layers of real files, so nothing needs Docker.

var (
	epoch   = time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	confDay = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
)

// ent is one entry of a hand-made layer.
type ent struct {
	name     string
	typ      byte
	mode     int64
	body     string
	link     string
	uid, gid int
	mtime    time.Time
}

func dirE(name string, mode int64) ent { return ent{name: name, typ: tar.TypeDir, mode: mode} }
func fileE(name string, mode int64, body string) ent {
	return ent{name: name, typ: tar.TypeReg, mode: mode, body: body}
}
func symlinkE(name, target string) ent {
	return ent{name: name, typ: tar.TypeSymlink, mode: 0o777, link: target}
}
func hardlinkE(name, target string) ent {
	return ent{name: name, typ: tar.TypeLink, mode: 0o755, link: target}
}

// layerTar is the uncompressed tar of ents.
func layerTar(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{
			Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link,
			Uid: e.uid, Gid: e.gid, ModTime: epoch, Format: tar.FormatPAX,
		}
		if !e.mtime.IsZero() {
			h.ModTime = e.mtime
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if e.typ == tar.TypeChar {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func layer(t *testing.T, ents ...ent) v1.Layer {
	t.Helper()
	b := layerTar(t, ents...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// image stacks layers (the first at the bottom) under cfg.
func image(t *testing.T, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config = cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// baseConfig is what the test image says about running it.
var baseConfig = v1.Config{
	Entrypoint: []string{"/usr/bin/app"},
	Cmd:        []string{"--flag"},
	Env:        []string{"PATH=/usr/local/bin:/usr/bin", "A=1"},
	WorkingDir: "/usr/bin",
	User:       "1000:1000",
	ExposedPorts: map[string]struct{}{
		"80/tcp": {}, "53/udp": {}, "8080": {}, "9000-9001/tcp": {},
	},
}

// baseImage is the image most tests read: two layers, the upper one
// removing a file (whiteout), emptying a directory (opaque), adding files
// (one by an absolute name) and a hard link to a lower layer's file.
func baseImage(t *testing.T) v1.Image {
	t.Helper()
	lower := layer(t,
		dirE("etc", 0o755),
		fileE("etc/passwd", 0o644, "root:x:0:0::/root:/bin/sh\n"),
		dirE("etc/ro", 0o555),
		fileE("etc/ro/file", 0o444, "read only\n"),
		dirE("usr", 0o755),
		dirE("usr/bin", 0o755),
		fileE("usr/bin/app", 0o755, "#!/bin/sh\necho app\n"),
		fileE("usr/bin/data", 0o644, "data\n"),
		fileE("usr/bin/suid", 0o4755, "suid\n"),
		hardlinkE("usr/bin/app-hard", "usr/bin/app"),
		symlinkE("bin", "usr/bin"),
		dirE("usr/local", 0o755),
		dirE("usr/local/bin", 0o755),
		symlinkE("usr/local/bin/tool", "/usr/bin/app"),
		symlinkE("usr/bin/loop1", "loop2"),
		symlinkE("usr/bin/loop2", "loop1"),
		dirE("old", 0o755),
		fileE("old/a", 0o644, "a\n"),
		fileE("old/b", 0o644, "b\n"),
		fileE("gone.txt", 0o644, "gone\n"),
		dirE("dev", 0o755),
		ent{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		dirE("run", 0o755),
		ent{name: "run/fifo", typ: tar.TypeFifo, mode: 0o644},
	)
	upper := layer(t,
		fileE(".wh.gone.txt", 0o644, ""),
		fileE("old/.wh..wh..opq", 0o644, ""),
		fileE("old/new", 0o644, "new\n"),
		ent{name: "home/user", typ: tar.TypeDir, mode: 0o750, uid: 1000, gid: 1000},
		ent{name: "home/user/file", typ: tar.TypeReg, mode: 0o600, body: "mine\n", uid: 1000, gid: 1000},
		ent{name: "/etc/abs.conf", typ: tar.TypeReg, mode: 0o640, body: "abs\n", mtime: confDay},
		hardlinkE("usr/bin/hl-upper", "usr/bin/app"),
	)
	return image(t, baseConfig, lower, upper)
}

// writeTarball writes img as `docker save` does, with tarball.Write
// (layers gzipped).
func writeTarball(t *testing.T, img v1.Image, tag string) string {
	t.Helper()
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "docker.tar")
	if err := tarball.WriteToFile(p, ref, img); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeDockerSave writes img as Docker's own `docker save` does, layers
// uncompressed in <diffid>/layer.tar. Without keep, the layers listed in
// manifest.json are missing from the archive.
func writeDockerSave(t *testing.T, img v1.Image, tags []string, keep bool) []byte {
	t.Helper()
	cfgName, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(n string, b []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b)), ModTime: epoch}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	add(cfgName.Hex+".json", raw)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, l := range layers {
		d, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, d.Hex+"/layer.tar")
		if keep {
			rc, err := l.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			add(d.Hex+"/layer.tar", b)
		}
	}
	m, err := json.Marshal([]map[string]any{{"Config": cfgName.Hex + ".json", "RepoTags": tags, "Layers": files}})
	if err != nil {
		t.Fatal(err)
	}
	add("manifest.json", m)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeLayout writes an OCI image layout holding imgs, each named by its
// key in the index's annotations, and returns its directory.
func writeLayout(t *testing.T, imgs map[string]v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for n, img := range imgs {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{ociRefName: n})); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tarDir writes the tree under dir as a tar, as `skopeo copy …
// oci-archive:` does for a layout.
func tarDir(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "oci.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "archive.tar")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustOpen(t *testing.T, p string, opts ...Option) *Image {
	t.Helper()
	im, err := Open(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}
