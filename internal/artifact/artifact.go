// Package artifact packs a campaign's artifact — the files a reviewer
// checks — into one deterministic tar.gz with a sha256sum-compatible
// manifest, and unpacks and checks one. Make gathers what goes in (the
// experiment file, a database of the campaign's rows alone, the report
// rendered from it, the environment, the build, the command lines, a
// README) and Verify checks an archive, its report rendered again; the
// rendering is the caller's (Render), so the archived report is the one
// the report command writes.
//
// An archive holds one top directory (the campaign's ID) and in it plain
// files, SHA256SUMS among them: one "<hex>  <name>" line per other file,
// so `sha256sum -c SHA256SUMS` in the extracted directory checks them.
// Entries are sorted by name, with one modification time, owner 0:0 and
// mode 0644 (the directory 0755), and the gzip header carries no time or
// name: the same files make the same bytes.
package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// SumsName is the manifest's name: the sha256sum lines of every other file.
const SumsName = "SHA256SUMS"

// Entry is one file of an archive: its name in the top directory, and its
// bytes, in Data or in the file at Path.
type Entry struct {
	Name string
	Data []byte
	Path string
}

// Write writes the archive of entries under directory top, each with
// modification time mtime, then SHA256SUMS of them all.
func Write(w io.Writer, top string, mtime time.Time, entries []Entry) error {
	if err := checkName(top); err != nil {
		return fmt.Errorf("artifact directory: %w", err)
	}
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	sums := map[string]string{}
	for i, e := range es {
		if err := checkName(e.Name); err != nil {
			return err
		}
		if e.Name == SumsName || i > 0 && es[i-1].Name == e.Name {
			return fmt.Errorf("artifact file %q: given twice, or the manifest's name", e.Name)
		}
		s, err := sumOf(e)
		if err != nil {
			return err
		}
		sums[e.Name] = s
	}
	es = append(es, Entry{Name: SumsName, Data: Manifest(sums)})
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	mtime = mtime.UTC().Truncate(time.Second)
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	dir := &tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755, ModTime: mtime}
	if err := tw.WriteHeader(dir); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	for _, e := range es {
		if err := writeEntry(tw, top, mtime, e, sums[e.Name]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	return zw.Close()
}

// Manifest is the sha256sum lines of sums (name → hex), sorted by name.
func Manifest(sums map[string]string) []byte {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return b.Bytes()
}

// checkName accepts a plain file name: no directory, nothing sha256sum
// would escape or a shell would need quoted in a line of SHA256SUMS.
func checkName(n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\n\r\x00 ") {
		return fmt.Errorf("artifact file name %q: want a plain file name", n)
	}
	return nil
}

// open returns an entry's bytes and their length.
func open(e Entry) (io.ReadCloser, int64, error) {
	if e.Path == "" {
		return io.NopCloser(bytes.NewReader(e.Data)), int64(len(e.Data)), nil
	}
	f, err := os.Open(e.Path)
	if err != nil {
		return nil, 0, fmt.Errorf("artifact file %s: %w", e.Name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("artifact file %s: %w", e.Name, err)
	}
	return f, st.Size(), nil
}

func sumOf(e Entry) (string, error) {
	r, _, err := open(e)
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("artifact file %s: %w", e.Name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeEntry writes one file, and fails if its bytes are not the ones
// summed (a file that changed while the archive was written).
func writeEntry(tw *tar.Writer, top string, mtime time.Time, e Entry, sum string) error {
	r, size, err := open(e)
	if err != nil {
		return err
	}
	defer r.Close()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + e.Name, Mode: 0o644, Size: size, ModTime: mtime}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("artifact file %s: %w", e.Name, err)
	}
	h := sha256.New()
	if _, err := io.Copy(tw, io.TeeReader(io.LimitReader(r, size), h)); err != nil {
		return fmt.Errorf("artifact file %s: %w", e.Name, err)
	}
	if sum != "" && hex.EncodeToString(h.Sum(nil)) != sum {
		return fmt.Errorf("artifact file %s changed while the archive was written", e.Name)
	}
	return nil
}
