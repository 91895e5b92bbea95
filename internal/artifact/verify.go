package artifact

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxFileBytes bounds one extracted file, so a hostile archive cannot
// fill the disk from a few bytes of gzip.
const MaxFileBytes = 64 << 30

// Extracted is an archive unpacked into a directory.
type Extracted struct {
	Top   string            // the archive's top directory: the campaign's ID
	Dir   string            // where its files are on disk
	Files []string          // its files' names, in the archive's order
	Sums  map[string]string // each file's SHA-256 as it was extracted, hex
}

// Path is where file name of the archive is on disk.
func (x Extracted) Path(name string) string { return filepath.Join(x.Dir, name) }

// Extract unpacks an archive (tar.gz) into dir/<top>/. It accepts only
// what Write makes: one top directory holding plain files, each once; a
// link, a device, a path out of the top directory or a second top
// directory is an error, and nothing is written outside dir.
func Extract(r io.Reader, dir string) (Extracted, error) {
	var x Extracted
	zr, err := gzip.NewReader(r)
	if err != nil {
		return x, fmt.Errorf("not a gzip-compressed archive: %w", err)
	}
	tr := tar.NewReader(zr)
	x.Sums = map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return x, fmt.Errorf("reading the archive: %w", err)
		}
		top, name, err := x.place(hdr, dir)
		if err != nil {
			return x, err
		}
		if x.Top == "" {
			x.Top, x.Dir = top, filepath.Join(dir, top)
			if err := os.Mkdir(x.Dir, 0o755); err != nil {
				return x, err
			}
		}
		if name == "" {
			continue
		}
		sum, err := extractFile(tr, x.Path(name), hdr.Size)
		if err != nil {
			return x, fmt.Errorf("extracting %s: %w", name, err)
		}
		x.Files = append(x.Files, name)
		x.Sums[name] = sum
	}
	if x.Top == "" {
		return x, errors.New("the archive is empty")
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return x, fmt.Errorf("reading the archive: %w", err)
	}
	return x, nil
}

// place checks an entry's header: its top directory and its file name
// ("" for the directory itself).
func (x Extracted) place(hdr *tar.Header, dir string) (top, name string, err error) {
	top, name, _ = strings.Cut(strings.TrimSuffix(hdr.Name, "/"), "/")
	switch {
	case checkName(top) != nil:
		return "", "", fmt.Errorf("archive entry %q: not under one top directory", hdr.Name)
	case x.Top != "" && top != x.Top:
		return "", "", fmt.Errorf("archive entry %q: a second top directory beside %s/", hdr.Name, x.Top)
	case name == "" && hdr.Typeflag == tar.TypeDir:
		return top, "", nil
	case hdr.Typeflag != tar.TypeReg:
		return "", "", fmt.Errorf("archive entry %q: not a plain file", hdr.Name)
	case checkName(name) != nil:
		return "", "", fmt.Errorf("archive entry %q: a file in a subdirectory, or a name out of the top directory", hdr.Name)
	case slices.Contains(x.Files, name):
		return "", "", fmt.Errorf("archive entry %q: twice in the archive", hdr.Name)
	case hdr.Size > MaxFileBytes:
		return "", "", fmt.Errorf("archive entry %q: %d bytes, more than an artifact's file may hold", hdr.Name, hdr.Size)
	}
	return top, name, nil
}

// extractFile writes one file's bytes and returns their SHA-256.
func extractFile(r io.Reader, path string, size int64) (string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = io.ErrUnexpectedEOF
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// Check is one verdict of a verification.
type Check struct {
	What   string // what was checked: "sha256 report.html"
	OK     bool
	Detail string // what differs, or what was found
}

// CheckSums checks the extracted files against SHA256SUMS: one check per
// line (the file is there and its sum matches) and one per file that is
// there but not listed, after one for the manifest itself.
func (x Extracted) CheckSums() []Check {
	raw, err := os.ReadFile(x.Path(SumsName))
	if !slices.Contains(x.Files, SumsName) || err != nil {
		return []Check{{What: SumsName, Detail: "missing from the archive"}}
	}
	listed, bad := parseSums(raw)
	if bad != "" {
		return []Check{{What: SumsName, Detail: bad}}
	}
	out := []Check{{What: SumsName, OK: true, Detail: fmt.Sprintf("%d files listed", len(listed))}}
	names := make([]string, 0, len(listed))
	for n := range listed {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := Check{What: "sha256 " + n}
		got, ok := x.Sums[n]
		switch {
		case !ok:
			c.Detail = "listed in " + SumsName + " but missing from the archive"
		case got != listed[n]:
			c.Detail = fmt.Sprintf("%s lists %s, the file's is %s", SumsName, listed[n], got)
		default:
			c.OK = true
		}
		out = append(out, c)
	}
	for _, n := range x.Files {
		if _, ok := listed[n]; !ok && n != SumsName {
			out = append(out, Check{What: "unlisted " + n, Detail: "in the archive but not in " + SumsName})
		}
	}
	return out
}

// parseSums reads sha256sum lines, "<hex>  <name>" (or "<hex> *<name>",
// binary mode); anything else is a problem, said in bad.
func parseSums(raw []byte) (sums map[string]string, bad string) {
	sums = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for i := 1; sc.Scan(); i++ {
		sum, name, ok := strings.Cut(sc.Text(), " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != sha256.Size || checkName(name) != nil {
			return nil, fmt.Sprintf("line %d: %q is not a sha256sum line of a file of the archive", i, sc.Text())
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Sprintf("line %d: %s listed twice", i, name)
		}
		sums[name] = strings.ToLower(sum)
	}
	if err := sc.Err(); err != nil {
		return nil, err.Error()
	}
	return sums, ""
}
