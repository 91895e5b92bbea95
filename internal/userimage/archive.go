package userimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// accepted says which archives Open reads, for errors.
const accepted = "accepted: the tar `docker save` or `podman save` writes, or an OCI image layout in a tar (`skopeo copy … oci-archive:FILE`)"

// Annotations of an OCI layout's index that name an image.
const (
	containerdName = "io.containerd.image.name"
	ociRefName     = "org.opencontainers.image.ref.name"
)

// open reads an archive through opener, once to learn its format, then
// with the reader of that format.
func open(opener tarball.Opener, source string, o options) (*Image, error) {
	names, err := listArchive(opener)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: %w; %s", source, err, accepted)
	}
	switch {
	case names["manifest.json"]:
		return openDockerArchive(opener, source, names, o)
	case names["oci-layout"] && names["index.json"]:
		return openOCIArchive(opener, source, o)
	}
	return nil, fmt.Errorf("image archive %s is a tar but neither a docker save archive (manifest.json at its root) nor an OCI image layout (oci-layout and index.json at its root); %s", source, accepted)
}

// compressions are the magic numbers of the compressors people apply to a
// saved image, with the command that undoes each.
var compressions = []struct {
	magic []byte
	name  string
	undo  string
}{
	{[]byte{0x1f, 0x8b}, "gzip", "gunzip"},
	{[]byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd", "unzstd"},
	{[]byte{0xfd, '7', 'z', 'X', 'Z', 0}, "xz", "unxz"},
	{[]byte("BZh"), "bzip2", "bunzip2"},
}

// listArchive reads every header of the tar opener gives and returns the
// set of its entries' cleaned names. Reading to the end is what finds a
// truncated archive before anything else reads it.
func listArchive(opener tarball.Opener) (map[string]bool, error) {
	rc, err := opener()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	head := make([]byte, 6)
	n, err := io.ReadFull(rc, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	head = head[:n]
	for _, c := range compressions {
		if bytes.HasPrefix(head, c.magic) {
			return nil, fmt.Errorf("it is compressed with %s, where a plain tar is expected: decompress it first (%s)", c.name, c.undo)
		}
	}
	r := io.MultiReader(bytes.NewReader(head), rc)
	if s, ok := rc.(io.Seeker); ok {
		// A file seeks past each entry's data rather than reading it.
		if _, err := s.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		r = rc
	}
	names := map[string]bool{}
	tr := tar.NewReader(r)
	last := ""
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && last == "" {
			return nil, fmt.Errorf("it is not a tar archive (%v)", err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("it ends inside entry %s: the archive is truncated", last)
		}
		if err != nil {
			return nil, fmt.Errorf("it is corrupt after entry %s (%v)", last, err)
		}
		last = hdr.Name
		names[path.Clean(hdr.Name)] = true
	}
	if len(names) == 0 {
		return nil, errors.New("it holds no entries (an empty tar, or not a tar archive)")
	}
	return names, nil
}

// openDockerArchive reads a `docker save` archive with package tarball.
func openDockerArchive(opener tarball.Opener, source string, names map[string]bool, o options) (*Image, error) {
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: reading its manifest.json: %w", source, err)
	}
	cands := make([][]string, len(m))
	for i, d := range m {
		cands[i] = d.RepoTags
	}
	i, err := choose(cands, o.tag)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: %w", source, err)
	}
	d := m[i]
	for _, f := range append([]string{d.Config}, d.Layers...) {
		if !names[path.Clean(f)] {
			return nil, fmt.Errorf("image archive %s: its manifest.json lists %s, which the archive lacks: the archive is incomplete", source, f)
		}
	}
	var tag *name.Tag
	if len(m) > 1 {
		// tarball picks an image of several by a tag, the one choose matched.
		for _, t := range d.RepoTags {
			if sameName(o.tag, t) {
				nt, err := name.NewTag(t)
				if err != nil {
					return nil, fmt.Errorf("image archive %s: tag %q: %w", source, t, err)
				}
				tag = &nt
				break
			}
		}
	}
	img, err := tarball.Image(opener, tag)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: %w", source, err)
	}
	return newImage(img, d.RepoTags, source)
}

// openOCIArchive copies an OCI layout out of its tar into a temporary
// directory, where package layout reads it.
func openOCIArchive(opener tarball.Opener, source string, o options) (*Image, error) {
	tmp, err := os.MkdirTemp(o.tempDir, "ctrbench-userimage-")
	if err != nil {
		return nil, fmt.Errorf("image archive %s: a directory to read its OCI layout in: %w", source, err)
	}
	if err := extractLayout(opener, tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("image archive %s: copying its OCI layout to %s: %w", source, tmp, err)
	}
	im, err := openLayoutDir(tmp, source, o)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	im.tmp = tmp
	return im, nil
}

// extractLayout writes the files and directories of an OCI layout's tar
// into dir. A layout holds nothing else; names cannot leave dir.
func extractLayout(opener tarball.Opener, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	rc, err := opener()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p, err := inRoot(hdr.Name)
		if err != nil {
			return err
		}
		rel := relName(p)
		switch hdr.Typeflag {
		case tar.TypeXGlobalHeader:
		case tar.TypeDir:
			if err := root.MkdirAll(rel, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeLayoutFile(root, rel, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s is a %s, where an OCI image layout holds only files and directories", hdr.Name, typeName(hdr.Typeflag))
		}
	}
}

func writeLayoutFile(root *os.Root, rel string, r io.Reader) error {
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", rel, err)
	}
	return f.Close()
}

// openLayoutDir reads the OCI image layout in dir with package layout.
func openLayoutDir(dir, source string, o options) (*Image, error) {
	lp, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: no OCI image layout (%v); %s", source, err, accepted)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("image archive %s: its index.json: %w", source, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image archive %s: its index.json: %w", source, err)
	}
	cands := make([][]string, len(im.Manifests))
	for i, d := range im.Manifests {
		cands[i] = descriptorNames(d)
	}
	i, err := choose(cands, o.tag)
	if err != nil {
		return nil, fmt.Errorf("image archive %s: %w", source, err)
	}
	img, err := imageOf(idx, im.Manifests[i])
	if err != nil {
		return nil, fmt.Errorf("image archive %s: %w", source, err)
	}
	var tags []string
	if n := im.Manifests[i].Annotations[containerdName]; n != "" {
		tags = []string{n}
	} else if n := im.Manifests[i].Annotations[ociRefName]; n != "" {
		tags = []string{n}
	}
	return newImage(img, tags, source)
}

// descriptorNames are the names an OCI index gives one of its images.
func descriptorNames(d v1.Descriptor) []string {
	var names []string
	for _, k := range []string{containerdName, ociRefName} {
		if n := d.Annotations[k]; n != "" {
			names = append(names, n)
		}
	}
	return names
}

// imageOf is the image d describes; for an index of several platforms
// (a multi-platform image), the one for linux on this machine's
// architecture.
func imageOf(idx v1.ImageIndex, d v1.Descriptor) (v1.Image, error) {
	switch {
	case d.MediaType.IsImage():
		return idx.Image(d.Digest)
	case d.MediaType.IsIndex():
	default:
		return nil, fmt.Errorf("its index.json lists %s of media type %q, neither an image manifest nor an image index", d.Digest, d.MediaType)
	}
	child, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	cm, err := child.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, m := range cm.Manifests {
		if m.Platform == nil || !m.MediaType.IsImage() {
			continue
		}
		if m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			return child.Image(m.Digest)
		}
		have = append(have, m.Platform.String())
	}
	return nil, fmt.Errorf("its image %s has no variant for linux/%s, the architecture of this machine; it has: %s", d.Digest, runtime.GOARCH, strings.Join(have, ", "))
}

// choose picks which of an archive's images to read, given each one's
// names: the one tag names, or the only one when tag is empty.
func choose(cands [][]string, tag string) (int, error) {
	if len(cands) == 0 {
		return 0, errors.New("it holds no image")
	}
	if tag == "" {
		if len(cands) == 1 {
			return 0, nil
		}
		return 0, fmt.Errorf("it holds %d images (%s): name the one to run by its tag", len(cands), listNames(cands))
	}
	var found []int
	for i, names := range cands {
		for _, n := range names {
			if sameName(tag, n) {
				found = append(found, i)
				break
			}
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return 0, fmt.Errorf("%d of its images are tagged %s: the tag does not tell which to run", len(found), tag)
	case len(cands) == 1 && len(cands[0]) == 0:
		return 0, nil // an image saved by its ID has no name to check
	}
	return 0, fmt.Errorf("it holds no image tagged %s; it holds %s", tag, listNames(cands))
}

func listNames(cands [][]string) string {
	var s []string
	for _, names := range cands {
		if len(names) == 0 {
			s = append(s, "an image without a tag")
			continue
		}
		s = append(s, strings.Join(names, " = "))
	}
	return strings.Join(s, ", ")
}

// sameName says whether two image names are the same once read as Docker
// reads them (alpine is docker.io/library/alpine:latest).
func sameName(a, b string) bool {
	if a == b {
		return true
	}
	ta, err := name.NewTag(a)
	if err != nil {
		return false
	}
	tb, err := name.NewTag(b)
	return err == nil && ta.Name() == tb.Name()
}

// typeName says what kind of entry a tar type flag marks.
func typeName(flag byte) string {
	switch flag {
	case tar.TypeReg:
		return "regular file"
	case tar.TypeDir:
		return "directory"
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("tar entry of type %q", flag)
}
