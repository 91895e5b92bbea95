package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// epoch is the mtime of every entry, so the tar depends on content only.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// WriteTar writes the build context: the Dockerfile at the root and the
// image's filesystem under rootfs/. The output is byte-identical for the
// same Context.
func (c *Context) WriteTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	if err := writeEntry(tw, "Dockerfile", 0o644, []byte(c.Dockerfile)); err != nil {
		return err
	}
	if err := writeEntry(tw, "rootfs/", fs.ModeDir|0o755, nil); err != nil {
		return err
	}
	for _, f := range c.Files {
		name := "rootfs" + f.Path
		if f.Mode.IsDir() {
			name += "/"
		}
		if err := writeEntry(tw, name, f.Mode, f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing build context: %w", err)
	}
	return nil
}

func writeEntry(tw *tar.Writer, name string, mode fs.FileMode, data []byte) error {
	hdr := &tar.Header{
		Name:    name,
		Mode:    tarMode(mode),
		ModTime: epoch,
		Uid:     0,
		Gid:     0,
		Uname:   "root",
		Gname:   "root",
		Format:  tar.FormatPAX,
	}
	if mode.IsDir() {
		hdr.Typeflag = tar.TypeDir
		if !strings.HasSuffix(hdr.Name, "/") {
			hdr.Name += "/"
		}
	} else {
		hdr.Typeflag = tar.TypeReg
		hdr.Size = int64(len(data))
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing build context entry %s: %w", name, err)
	}
	if len(data) > 0 {
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("writing build context entry %s: %w", name, err)
		}
	}
	return nil
}

// tarMode converts Go's mode bits to the Unix bits a tar header carries.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
