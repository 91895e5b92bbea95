package userimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// walkFlattened calls fn for each entry of img's root filesystem, its
// layers flattened by mutate.Extract: whiteouts and opaque directories
// applied, an upper layer's entries before a lower one's.
func walkFlattened(img v1.Image, fn func(*tar.Header, io.Reader) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading its layers: %w", err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if err := fn(hdr, tr); err != nil {
			return fmt.Errorf("entry %s: %w", hdr.Name, err)
		}
	}
	// mutate.Extract ends its tar before it passes on a layer's error (an
	// unreadable or corrupt layer, an unsafe name): the error comes after
	// the tar's end, and a stream cut short would otherwise look whole.
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return fmt.Errorf("reading its layers: %w", err)
	}
	return nil
}
