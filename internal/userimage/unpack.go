package userimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Summary counts what Unpack wrote and names what it left out.
type Summary struct {
	Files     int   // regular files
	Bytes     int64 // the regular files' content
	Dirs      int
	Symlinks  int
	HardLinks int
	// SetIDCleared counts the files and directories whose setuid or setgid
	// bit Unpack dropped because ctrbench did not run as root: the files
	// belong to whoever unpacked them, and a program that is setuid to an
	// ordinary user is not what the image meant.
	SetIDCleared int
	// Skipped names each entry Unpack did not write, "/path: why": device
	// nodes and FIFOs (a container's runtime mounts its own /dev), hard
	// links whose target is not in the image, and the rare entry an upper
	// layer's entry at the same path hides.
	Skipped []string
}

// Unpack writes the image's root filesystem — its layers flattened, with
// their whiteouts and opaque directories honoured — into dir, which must
// be empty or absent (it is made). Nothing is written outside dir: a
// leading / of an entry's name is dropped, and a name that climbs out
// with .. fails Unpack; a symbolic link is written as it is, wherever it
// points, and never followed while unpacking (an entry beneath one fails
// Unpack); a hard link must point to a file of the image.
//
// Regular files and directories keep their permission bits and times
// (symbolic links keep neither). Only when ctrbench runs as root do files
// keep their owners and their setuid and setgid bits; otherwise they
// belong to the caller and the bits are dropped (Summary.SetIDCleared).
// Device nodes and FIFOs are never made (Summary.Skipped). A directory the
// image makes read-only stays so, which os.RemoveAll cannot remove unless
// it runs as root: RemoveUnpacked removes the tree either way. On error dir
// holds part of the tree, for the caller to remove.
func (im *Image) Unpack(dir string) (Summary, error) {
	return im.unpack(dir, os.Geteuid() == 0)
}

func (im *Image) unpack(dir string, asRoot bool) (Summary, error) {
	if err := emptyDir(dir); err != nil {
		return Summary{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Summary{}, fmt.Errorf("unpack directory: %w", err)
	}
	defer root.Close()
	u := &unpacker{root: root, asRoot: asRoot, real: map[string]bool{".": true}}
	if err := walkFlattened(im.img, u.entry); err != nil {
		return u.sum, fmt.Errorf("unpacking image %s into %s: %w", im.source, dir, err)
	}
	if err := u.finish(); err != nil {
		return u.sum, fmt.Errorf("unpacking image %s into %s: %w", im.source, dir, err)
	}
	return u.sum, nil
}

// RemoveUnpacked removes a tree Unpack wrote, with its read-only
// directories, which a caller that is not root must make writable first.
// Symbolic links are removed, never followed.
func RemoveUnpacked(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		// WalkDir reads a directory after calling here: it can be made
		// readable too.
		return os.Chmod(p, 0o700)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing unpacked image %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing unpacked image %s: %w", dir, err)
	}
	return nil
}

// emptyDir makes dir if it is absent and checks it is empty.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unpack directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("unpack directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("unpack directory %s holds %s already: expected an empty or absent directory", dir, entries[0].Name())
	}
	return nil
}

type dirEntry struct {
	name string // relative to the root
	hdr  *tar.Header
}

// unpacker writes one image's flattened entries under a root.
type unpacker struct {
	root   *os.Root
	asRoot bool
	sum    Summary
	real   map[string]bool // directories known to be directories, not links, by relative name
	dirs   []dirEntry      // directories, whose metadata is set once all is written
	links  []*tar.Header   // hard links, made once all their targets may be written
}

func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	p, err := inRoot(hdr.Name)
	if err != nil {
		return err
	}
	name := relName(p)
	if name == "." {
		return nil // dir is the caller's: it keeps its own mode
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return u.dir(name, hdr)
	case tar.TypeReg:
		return u.file(name, hdr, r)
	case tar.TypeSymlink:
		return u.symlink(name, hdr)
	case tar.TypeLink:
		if _, err := inRoot(hdr.Linkname); err != nil {
			return fmt.Errorf("a hard link to %s, outside the image: %w", hdr.Linkname, err)
		}
		u.links = append(u.links, hdr)
	default:
		u.skip(p, typeName(hdr.Typeflag)+", not made")
	}
	return nil
}

func (u *unpacker) skip(p, why string) {
	u.sum.Skipped = append(u.sum.Skipped, p+": "+why)
}

// parents checks that every directory above name is a directory, not a
// link, making the missing ones when create is set.
func (u *unpacker) parents(name string, create bool) error {
	if u.real[path.Dir(name)] {
		return nil
	}
	cur := ""
	for _, c := range strings.Split(path.Dir(name), "/") {
		cur = path.Join(cur, c)
		if u.real[cur] {
			continue
		}
		fi, err := u.root.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist) && create:
			if err := u.root.Mkdir(cur, 0o755); err != nil {
				return err
			}
			if err := u.root.Chmod(cur, 0o755); err != nil { // whatever the umask
				return err
			}
		case err != nil:
			return err
		case fi.Mode().Type() == fs.ModeSymlink:
			return fmt.Errorf("/%s is a symbolic link, and no entry is written through a link", cur)
		case !fi.IsDir():
			return fmt.Errorf("/%s is a %v, not a directory", cur, fi.Mode().Type())
		}
		u.real[cur] = true
	}
	return nil
}

func (u *unpacker) dir(name string, hdr *tar.Header) error {
	if err := u.parents(name, true); err != nil {
		return err
	}
	fi, err := u.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Writable by its owner until finish sets its mode.
		if err := u.root.Mkdir(name, 0o700); err != nil {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		u.skip("/"+name, "directory hidden by an upper layer's entry")
		return nil
	}
	u.real[name] = true
	u.dirs = append(u.dirs, dirEntry{name, hdr})
	u.sum.Dirs++
	return nil
}

func (u *unpacker) file(name string, hdr *tar.Header, r io.Reader) error {
	if err := u.parents(name, true); err != nil {
		return err
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		u.skip("/"+name, "file hidden by an upper layer's entry")
		return nil
	}
	if err != nil {
		return err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	u.sum.Files++
	u.sum.Bytes += n
	return u.meta(name, hdr)
}

func (u *unpacker) symlink(name string, hdr *tar.Header) error {
	if err := u.parents(name, true); err != nil {
		return err
	}
	err := u.root.Symlink(hdr.Linkname, name)
	if errors.Is(err, fs.ErrExist) {
		u.skip("/"+name, "symbolic link hidden by an upper layer's entry")
		return nil
	}
	if err != nil {
		return err
	}
	u.sum.Symlinks++
	if u.asRoot {
		return u.root.Lchown(name, hdr.Uid, hdr.Gid)
	}
	return nil
}

// meta gives a file or directory its owner, mode and times.
func (u *unpacker) meta(name string, hdr *tar.Header) error {
	mode := hdr.FileInfo().Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	if u.asRoot {
		// Before Chmod: a change of owner clears setuid and setgid.
		if err := u.root.Chown(name, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
	} else if mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		mode &^= fs.ModeSetuid | fs.ModeSetgid
		u.sum.SetIDCleared++
	}
	if err := u.root.Chmod(name, mode); err != nil {
		return err
	}
	if hdr.ModTime.IsZero() {
		return nil
	}
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	return u.root.Chtimes(name, atime, hdr.ModTime)
}

// finish makes the hard links, then sets the directories' metadata,
// deepest first, so that a read-only directory is made so last and its
// times are not changed by writing inside it.
func (u *unpacker) finish() error {
	// A link can come before its target: the flattened stream gives upper
	// layers first. Make what can be made until nothing more can.
	pending := u.links
	for len(pending) > 0 {
		var later []*tar.Header
		for _, hdr := range pending {
			made, err := u.hardlink(hdr)
			if err != nil {
				return fmt.Errorf("entry %s: %w", hdr.Name, err)
			}
			if !made {
				later = append(later, hdr)
			}
		}
		if len(later) == len(pending) {
			break
		}
		pending = later
	}
	for _, hdr := range pending {
		p, _ := inRoot(hdr.Name)
		u.skip(p, "hard link to "+hdr.Linkname+", which was not written")
	}
	slices.SortStableFunc(u.dirs, func(a, b dirEntry) int {
		return strings.Count(b.name, "/") - strings.Count(a.name, "/")
	})
	for _, d := range u.dirs {
		if err := u.meta(d.name, d.hdr); err != nil {
			return fmt.Errorf("entry %s: %w", d.hdr.Name, err)
		}
	}
	return nil
}

// hardlink makes the hard link hdr describes if its target is written.
func (u *unpacker) hardlink(hdr *tar.Header) (bool, error) {
	p, _ := inRoot(hdr.Name) // entry checked both names
	t, _ := inRoot(hdr.Linkname)
	name, target := relName(p), relName(t)
	if err := u.parents(target, false); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("a hard link to %s: %w", t, err)
	}
	if _, err := u.root.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := u.parents(name, true); err != nil {
		return false, err
	}
	err := u.root.Link(target, name)
	if errors.Is(err, fs.ErrExist) {
		u.skip(p, "hard link hidden by an upper layer's entry")
		return true, nil
	}
	if err != nil {
		return false, err
	}
	u.sum.HardLinks++
	return true, nil
}
