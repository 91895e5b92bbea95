// Package userimage reads a user's own container image without a registry:
// the tar `docker save` (or `podman save`) writes, an OCI image layout in a
// tar (what `skopeo copy … oci-archive:FILE` writes) or in a directory, or
// the `docker save` stream package engine hands over for an image of the
// local engine. It tells the image's identity and configuration, finds the
// executable a command would run inside it, and unpacks its flattened root
// filesystem into a directory, so one image runs on every platform: loaded
// into Docker or podman, as the root filesystem of an LXC container or a
// virtual machine, or chrooted as a host process for the bare-metal
// reference.
//
// The package reads archives and writes files; it never talks to an engine.
// Layers are read and flattened by go-containerregistry (tarball, layout,
// mutate.Extract), never by hand.
package userimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image is one image read from an archive. Close it when done with it.
type Image struct {
	img    v1.Image
	source string // the archive's path, or a phrase naming the stream, for errors
	digest string
	tags   []string
	config Config
	tmp    string // a temporary copy of an OCI archive's layout, removed by Close
	saved  string // an archive OpenSource had saved, removed by Close

	// The image's flattened files, read once by the first LookPath.
	filesOnce sync.Once
	files     map[string]fileEntry
	filesErr  error
}

// Option changes how Open and FromOpener read an archive.
type Option func(*options)

type options struct {
	tag     string
	tempDir string
}

// WithTag names the image to read from an archive holding several, by one
// of its tags ("registry.example/app:1.2", or "alpine", which Docker reads
// as docker.io/library/alpine:latest, as it compares them). A tag that
// names no image of the archive is an error, except for an archive whose
// only image has no name at all (saved by its ID), which is read whatever
// the tag.
func WithTag(tag string) Option {
	return func(o *options) { o.tag = tag }
}

// WithTempDir sets the directory in which an OCI archive's layout is copied
// while its Image is open (os.TempDir() when unset). It needs room for the
// whole archive; a `docker save` archive is read in place and needs none.
func WithTempDir(dir string) Option {
	return func(o *options) { o.tempDir = dir }
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Open reads the image in the archive at path: a `docker save` or `podman
// save` tar (manifest.json at its root), an OCI image layout in a tar
// (oci-layout and index.json at its root), or a directory holding an OCI
// image layout. A compressed archive is refused with the command that
// decompresses it. An archive holding several images needs WithTag.
func Open(path string, opts ...Option) (*Image, error) {
	o := collect(opts)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("image archive: %w", err)
	}
	if fi.IsDir() {
		return openLayoutDir(path, path, o)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("image archive %s is a %s; expected a tar file or a directory holding an OCI image layout", path, fi.Mode().Type())
	}
	return open(func() (io.ReadCloser, error) { return os.Open(path) }, path, o)
}

// OpenSource opens a user's image from its archive or, when only ref (an
// image in an engine) is given, from the archive save writes for it
// (Setup.Save: the orchestrator hands over package engine's
// SaveImageTemp), which Close removes.
func OpenSource(ctx context.Context, ref, archive string, save func(context.Context, string) (string, error)) (*Image, error) {
	if archive != "" {
		return Open(archive)
	}
	path, err := save(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	im, err := Open(path)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	im.saved, im.source = path, ref
	return im, nil
}

// FromOpener reads the image in a `docker save` stream, as package engine
// hands one over for an image of a local engine (an OCI layout stream is
// accepted too). opener is called once for each pass over the stream —
// a few while FromOpener reads it, then one per layer each time the layers
// are read (LookPath once, each Unpack) — and every call must give the
// same bytes. An opener that asks the engine to save the image anew on each call
// is correct but slow for a large image; saving it once to a file and
// calling Open is the faster way.
func FromOpener(opener func() (io.ReadCloser, error), opts ...Option) (*Image, error) {
	return open(opener, "the docker save stream", collect(opts))
}

// newImage reads what Image tells from img.
func newImage(img v1.Image, tags []string, source string) (*Image, error) {
	h, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("image archive %s: the image's configuration: %w", source, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image archive %s: the image's configuration %s: %w", source, h, err)
	}
	cfg, err := configOf(cf)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: the image's configuration %s: %w", source, h, err)
	}
	return &Image{img: verifiedImage{img}, source: source, digest: h.String(), tags: tags, config: cfg}, nil
}

// Close removes the temporary copy of an OCI archive's layout, if the
// image has one. The Image is unusable after it.
func (im *Image) Close() error {
	if im.saved != "" {
		os.Remove(im.saved)
		im.saved = ""
	}
	if im.tmp == "" {
		return nil
	}
	err := os.RemoveAll(im.tmp)
	im.tmp = ""
	if err != nil {
		return fmt.Errorf("removing the copy of image archive %s: %w", im.source, err)
	}
	return nil
}

// Digest is the digest of the image's configuration, "sha256:…": the ID
// `docker inspect` and `docker images --no-trunc` show, the same whichever
// archive format carried the image.
func (im *Image) Digest() string { return im.digest }

// RepoTags are the names the archive gives the image ("app:1.2",
// "docker.io/library/alpine:3.20"), none for an image saved by its ID.
func (im *Image) RepoTags() []string { return slices.Clone(im.tags) }

// Config is what the image says about running it.
func (im *Image) Config() Config { return im.config.clone() }

// Source is the archive the image was read from, for messages: its path,
// or "the docker save stream".
func (im *Image) Source() string { return im.source }
