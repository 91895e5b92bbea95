package image

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
)

// WriteCpio writes the image's filesystem, plus extra files, as a newc
// cpio archive: the format of a Linux initramfs, which the kernel unpacks
// into its first root file system. Every directory a file lies in gets an
// entry of its own before the file (the kernel creates none), and the
// output is byte-identical for the same content.
func (c *Context) WriteCpio(w io.Writer, extra ...File) error {
	all := map[string]File{}
	for _, f := range append(append([]File{}, c.Files...), extra...) {
		all[f.Path] = f
		for d := path.Dir(f.Path); d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = File{Path: d, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	// Sorted, a directory precedes what is in it.
	sort.Strings(paths)
	cw := &cpioWriter{w: w}
	for i, p := range paths {
		f := all[p]
		if err := cw.entry(i+1, p[1:], cpioMode(f.Mode), f.Data); err != nil {
			return err
		}
	}
	if err := cw.entry(0, "TRAILER!!!", 0, nil); err != nil {
		return err
	}
	return cw.err
}

// cpioMode is the Unix mode of an entry: its type and permission bits. A
// symbolic link's Data is its target.
func cpioMode(m fs.FileMode) uint32 {
	mode := uint32(tarMode(m))
	switch {
	case m.IsDir():
		return mode | 0o040000
	case m&fs.ModeSymlink != 0:
		return mode | 0o120000
	}
	return mode | 0o100000
}

type cpioWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (cw *cpioWriter) write(b []byte) {
	if cw.err != nil {
		return
	}
	n, err := cw.w.Write(b)
	cw.n += int64(n)
	cw.err = err
}

// pad writes zeros up to the next multiple of four bytes.
func (cw *cpioWriter) pad() {
	if r := cw.n % 4; r != 0 {
		cw.write(make([]byte, 4-r))
	}
}

// entry writes one newc header ("070701" and thirteen 8-digit hex fields),
// the name with its NUL, and the data, each padded to four bytes.
func (cw *cpioWriter) entry(ino int, name string, mode uint32, data []byte) error {
	nlink := 1
	if mode&0o040000 != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, epoch.Unix(), len(data), 0, 0, 0, 0, len(name)+1, 0)
	cw.write([]byte(hdr))
	cw.write(append([]byte(name), 0))
	cw.pad()
	cw.write(data)
	cw.pad()
	if cw.err != nil {
		return fmt.Errorf("writing initramfs entry %s: %w", name, cw.err)
	}
	return nil
}
