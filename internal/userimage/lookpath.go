package userimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// maxLinks is how many symbolic links one lookup follows before calling it
// a loop, Linux's own limit.
const maxLinks = 40

// fileEntry is what the image's flattened root filesystem holds at a path.
type fileEntry struct {
	kind     byte        // the tar type flag
	mode     fs.FileMode // permission bits
	link     string      // a symbolic link's target as written; a hard link's as an absolute path
	implicit bool        // a directory known only from the entries below it
}

// index is the image's flattened files by absolute path, read the first
// time it is needed.
func (im *Image) index() (map[string]fileEntry, error) {
	im.filesOnce.Do(func() { im.files, im.filesErr = readFiles(im.img) })
	return im.files, im.filesErr
}

// readFiles walks the image's flattened layers once. The first entry at a
// path is the one the image holds (an upper layer's), as Unpack keeps it.
func readFiles(img v1.Image) (map[string]fileEntry, error) {
	files := map[string]fileEntry{"/": {kind: tar.TypeDir, mode: 0o755}}
	err := walkFlattened(img, func(hdr *tar.Header, _ io.Reader) error {
		p, err := inRoot(hdr.Name)
		if err != nil {
			return err
		}
		if old, ok := files[p]; ok && !(old.implicit && hdr.Typeflag == tar.TypeDir) {
			return nil
		}
		e := fileEntry{kind: hdr.Typeflag, mode: hdr.FileInfo().Mode().Perm()}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			e.link = hdr.Linkname
		case tar.TypeLink:
			if e.link, err = inRoot(hdr.Linkname); err != nil {
				return fmt.Errorf("a hard link outside the image: %w", err)
			}
		}
		files[p] = e
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := files[d]; ok {
				break
			}
			files[d] = fileEntry{kind: tar.TypeDir, mode: 0o755, implicit: true}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// errLoop is a chain of symbolic links too long to be anything but a loop.
var errLoop = errors.New("too many levels of symbolic links")

// resolve follows p through the image's symbolic links as the kernel would
// with the image as its root (an absolute target starts again at the
// image's root, .. at the root stays there) and returns the path it names
// and what is there; a hard link gives its target's entry.
func resolve(files map[string]fileEntry, p string) (string, fileEntry, error) {
	cur := "/"
	todo := strings.Split(p, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		e, ok := files[next]
		if !ok {
			return "", fileEntry{}, fs.ErrNotExist
		}
		if e.kind == tar.TypeSymlink {
			if links++; links > maxLinks {
				return "", fileEntry{}, errLoop
			}
			if path.IsAbs(e.link) {
				cur = "/"
			}
			todo = append(strings.Split(e.link, "/"), todo...)
			continue
		}
		if len(todo) > 0 && e.kind != tar.TypeDir {
			return "", fileEntry{}, fmt.Errorf("%s is a %s, not a directory", next, typeName(e.kind))
		}
		cur = next
	}
	e := files[cur]
	if e.kind == tar.TypeLink {
		target, ok := files[e.link]
		if !ok {
			return "", fileEntry{}, fmt.Errorf("a hard link to %s, which the image does not hold", e.link)
		}
		e = target
	}
	return cur, e, nil
}

// errMissing is executable's answer for a path the image does not hold.
var errMissing = errors.New("the image holds no such file")

// executable says why the image cannot run p, or nil when it can.
func executable(files map[string]fileEntry, p string) error {
	_, e, err := resolve(files, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errMissing
	case err != nil:
		return err
	case e.kind == tar.TypeDir:
		return errors.New("it is a directory")
	case e.kind != tar.TypeReg:
		return fmt.Errorf("it is a %s", typeName(e.kind))
	case e.mode&0o111 == 0:
		return fmt.Errorf("it is not executable (mode %v)", e.mode)
	}
	return nil
}

// LookPath finds the executable a command named file runs inside the
// image, as a container's runtime finds it: a name with a slash is that
// path (relative to the image's working directory); any other is searched
// in the directories of search, a PATH value, where "" means the image's
// own (Config.Path). Symbolic links are followed inside the image, never
// on the host, and nothing is unpacked: the first call reads the image's
// layers once. It returns the path found, before its links are followed,
// or an error saying what the image lacks.
func (im *Image) LookPath(file, search string) (string, error) {
	if file == "" {
		return "", errors.New("an empty command: expected a program's name or path")
	}
	files, err := im.index()
	if err != nil {
		return "", fmt.Errorf("image %s: reading its files: %w", im.source, err)
	}
	wd := im.config.WorkingDir
	if !path.IsAbs(wd) {
		wd = path.Join("/", wd)
	}
	if strings.Contains(file, "/") {
		p := path.Join(wd, file)
		if path.IsAbs(file) {
			p = path.Clean(file)
		}
		if err := executable(files, p); err != nil {
			return "", fmt.Errorf("command %s in image %s: %w", file, im.source, err)
		}
		return p, nil
	}
	if search == "" {
		search = im.config.Path()
	}
	var hint error
	for _, dir := range strings.Split(search, ":") {
		p := path.Join(wd, dir, file)
		if path.IsAbs(dir) {
			p = path.Join(dir, file)
		}
		err := executable(files, p)
		if err == nil {
			return p, nil
		}
		if hint == nil && !errors.Is(err, errMissing) {
			hint = fmt.Errorf("%s: %w", p, err)
		}
	}
	if hint != nil {
		return "", fmt.Errorf("image %s has no executable %s in PATH %s (%v)", im.source, file, search, hint)
	}
	return "", fmt.Errorf("image %s has no executable %s in PATH %s", im.source, file, search)
}
