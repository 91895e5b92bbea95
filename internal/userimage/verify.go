package userimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// verifiedImage is an image whose layers check, as they are read to their
// end, that their content is what the image's configuration names (its
// rootfs.diff_ids, which the image's digest covers). Neither a layout's
// blobs nor a docker save archive's layer files are checked by the readers
// of go-containerregistry, and a corrupt archive must not run as the image
// it claims to be.
type verifiedImage struct{ v1.Image }

func (im verifiedImage) Layers() ([]v1.Layer, error) {
	layers, err := im.Image.Layers()
	if err != nil {
		return nil, err
	}
	// From the configuration itself: some layers' DiffID hashes their
	// content, which would check nothing.
	cf, err := im.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cf.RootFS.DiffIDs) != len(layers) {
		return nil, fmt.Errorf("the image's configuration lists %d layers and its manifest %d: the archive is corrupt", len(cf.RootFS.DiffIDs), len(layers))
	}
	out := make([]v1.Layer, len(layers))
	for i, l := range layers {
		out[i] = verifiedLayer{l, cf.RootFS.DiffIDs[i]}
	}
	return out, nil
}

type verifiedLayer struct {
	v1.Layer
	want v1.Hash // the configuration's diff_id of the layer
}

func (l verifiedLayer) Uncompressed() (io.ReadCloser, error) {
	want := l.want
	if want.Algorithm != "sha256" {
		return nil, fmt.Errorf("layer %s: a digest of %s, where sha256 is expected", want, want.Algorithm)
	}
	rc, err := l.Layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	return &verifyingReader{rc: rc, h: sha256.New(), want: want}, nil
}

type verifyingReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	want v1.Hash
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(r.h.Sum(nil)); got != r.want.Hex {
			return n, fmt.Errorf("layer %s: its content has the digest sha256:%s: the archive is corrupt", r.want, got)
		}
	}
	return n, err
}

func (r *verifyingReader) Close() error { return r.rc.Close() }
