package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var when = time.Date(2025, 6, 1, 12, 30, 45, 123456789, time.FixedZone("X", 3600))

func sample(t *testing.T) []Entry {
	t.Helper()
	db := filepath.Join(t.TempDir(), "results.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("rows "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	return []Entry{
		{Name: "report.html", Data: []byte("<html></html>\n")},
		{Name: "results.db", Path: db},
		{Name: "experiment.yaml", Data: []byte("name: x\n")},
	}
}

// The same files make the same bytes, whatever order they are given in;
// extracted, every sum checks.
func TestWriteDeterministicAndChecks(t *testing.T) {
	es := sample(t)
	var a, b bytes.Buffer
	if err := Write(&a, "camp-1", when, es); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, "camp-1", when, []Entry{es[2], es[0], es[1]}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same files differ")
	}
	x, err := Extract(bytes.NewReader(a.Bytes()), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{SumsName, "experiment.yaml", "report.html", "results.db"}
	if x.Top != "camp-1" || strings.Join(x.Files, " ") != strings.Join(want, " ") {
		t.Errorf("extracted %s/ %v, want camp-1/ %v", x.Top, x.Files, want)
	}
	for _, c := range x.CheckSums() {
		if !c.OK {
			t.Errorf("%s: %s", c.What, c.Detail)
		}
	}
	tr := tar.NewReader(mustGunzip(t, a.Bytes()))
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(when.Truncate(time.Second)) || h.Typeflag == tar.TypeReg && h.Mode != 0o644 {
			t.Errorf("%s: uid %d gid %d mode %o time %v", h.Name, h.Uid, h.Gid, h.Mode, h.ModTime)
		}
	}
}

func mustGunzip(t *testing.T, b []byte) *gzip.Reader {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// rawArchive is a tar.gz of exactly these entries (name → content; a
// name ending in "@link" is a symbolic link).
func rawArchive(t *testing.T, names []string, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(body))}
		if l, ok := strings.CutSuffix(n, "@link"); ok {
			h = &tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: "/etc/passwd"}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// Extract takes only what Write makes: nothing out of one top directory.
func TestExtractRefuses(t *testing.T) {
	for name, entries := range map[string][]string{
		"escape":   {"c/a", "c/../../evil"},
		"absolute": {"/etc/evil"},
		"two tops": {"c/a", "d/b"},
		"subdir":   {"c/sub/a"},
		"link":     {"c/a", "c/b@link"},
		"twice":    {"c/a", "c/a"},
		"no top":   {"a"},
		"dot name": {"c/."},
	} {
		dir := t.TempDir()
		if _, err := Extract(bytes.NewReader(rawArchive(t, entries, "x")), dir); err == nil {
			t.Errorf("%s: %v extracted", name, entries)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil")); err == nil {
			t.Fatalf("%s: a file was written out of the directory", name)
		}
	}
	if _, err := Extract(strings.NewReader("not gzip"), t.TempDir()); err == nil {
		t.Error("not an archive: extracted")
	}
}

// A changed file, a missing one and an unlisted one each fail a check.
func TestCheckSumsFindsTampering(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, "c", when, sample(t)); err != nil {
		t.Fatal(err)
	}
	x, err := Extract(bytes.NewReader(buf.Bytes()), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	x.Sums["report.html"] = strings.Repeat("0", 64)
	delete(x.Sums, "experiment.yaml")
	x.Files = append(x.Files[:1], x.Files[2:]...) // experiment.yaml
	x.Files = append(x.Files, "extra.txt")
	x.Sums["extra.txt"] = strings.Repeat("1", 64)
	failed := map[string]string{}
	for _, c := range x.CheckSums() {
		if !c.OK {
			failed[c.What] = c.Detail
		}
	}
	for _, w := range []string{"sha256 report.html", "sha256 experiment.yaml", "unlisted extra.txt"} {
		if _, ok := failed[w]; !ok {
			t.Errorf("no failed check %q: %v", w, failed)
		}
	}
	if len(failed) != 3 {
		t.Errorf("failed checks %v, want 3", failed)
	}
}
