package userimage

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func unpacked(t *testing.T, asRoot bool) (string, Summary) {
	t.Helper()
	im := mustOpen(t, tarDir(t, writeLayout(t, map[string]v1.Image{"app:1": baseImage(t)})))
	dir := filepath.Join(t.TempDir(), "rootfs")
	t.Cleanup(func() {
		if err := RemoveUnpacked(dir); err != nil {
			t.Error(err)
		}
	})
	sum, err := im.unpack(dir, asRoot)
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

func TestUnpack(t *testing.T) {
	dir, sum := unpacked(t, os.Geteuid() == 0)
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Error(err)
		}
		return string(b)
	}
	absent := func(p, why string) {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s is there (err %v); %s", p, err, why)
		}
	}
	if got := read("usr/bin/app"); got != "#!/bin/sh\necho app\n" {
		t.Errorf("usr/bin/app holds %q", got)
	}
	absent("gone.txt", "the upper layer's whiteout removes it")
	absent("old/a", "the upper layer makes old opaque")
	absent("old/b", "the upper layer makes old opaque")
	if got := read("old/new"); got != "new\n" {
		t.Errorf("old/new holds %q, want the upper layer's file", got)
	}
	if got := read("etc/abs.conf"); got != "abs\n" {
		t.Errorf("etc/abs.conf (written as /etc/abs.conf) holds %q, want it under the root", got)
	}
	for link, target := range map[string]string{"bin": "usr/bin", "usr/local/bin/tool": "/usr/bin/app"} {
		if got, err := os.Readlink(filepath.Join(dir, link)); err != nil || got != target {
			t.Errorf("%s: Readlink = %q, %v; want a symbolic link to %s", link, got, err, target)
		}
	}
	app, _ := os.Stat(filepath.Join(dir, "usr/bin/app"))
	for _, hl := range []string{"usr/bin/app-hard", "usr/bin/hl-upper"} {
		fi, err := os.Stat(filepath.Join(dir, hl))
		if err != nil || !os.SameFile(fi, app) {
			t.Errorf("%s is not a hard link to usr/bin/app (err %v)", hl, err)
		}
	}
	modes := map[string]fs.FileMode{
		"usr/bin/app": 0o755, "usr/bin/data": 0o644, "etc/ro": fs.ModeDir | 0o555,
		"etc/ro/file": 0o444, "home/user/file": 0o600, "etc/abs.conf": 0o640,
		"home": fs.ModeDir | 0o755, // made for home/user, which the layer lists alone
	}
	for p, want := range modes {
		if fi, err := os.Lstat(filepath.Join(dir, p)); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (err %v), want %v", p, fi.Mode(), err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "etc/abs.conf")); err != nil || !fi.ModTime().Equal(confDay) {
		t.Errorf("etc/abs.conf: mtime %v (err %v), want %v", fi.ModTime(), err, confDay)
	}
	if fi, err := os.Stat(filepath.Join(dir, "usr/bin")); err != nil || !fi.ModTime().Equal(epoch) {
		t.Errorf("usr/bin: mtime %v (err %v), want the layer's %v despite the files written in it", fi.ModTime(), err, epoch)
	}
	absent("dev/null", "device nodes are never made")
	absent("run/fifo", "FIFOs are never made")
	for _, want := range []string{"/dev/null: character device", "/run/fifo: FIFO"} {
		if !slices.ContainsFunc(sum.Skipped, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("Skipped = %q, want an entry starting %q", sum.Skipped, want)
		}
	}
	// etc/passwd, etc/ro/file, app, data, suid, old/new, home/user/file, etc/abs.conf
	if sum.Files != 8 || sum.HardLinks != 2 || sum.Symlinks != 4 || len(sum.Skipped) != 2 {
		t.Errorf("Summary = %+v, want 8 files, 2 hard links, 4 symbolic links, 2 skipped", sum)
	}
	if want := int64(len("root:x:0:0::/root:/bin/sh\nread only\n#!/bin/sh\necho app\ndata\nsuid\nnew\nmine\nabs\n")); sum.Bytes != want {
		t.Errorf("Summary.Bytes = %d, want %d", sum.Bytes, want)
	}
}

// As root, files keep their owners and setuid bits.
func TestUnpackAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root unpacks files with their owners")
	}
	dir, sum := unpacked(t, true)
	fi, err := os.Stat(filepath.Join(dir, "home/user/file"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 1000 {
		t.Errorf("home/user/file belongs to %d:%d, want the image's 1000:1000", st.Uid, st.Gid)
	}
	if fi, err := os.Stat(filepath.Join(dir, "usr/bin/suid")); err != nil || fi.Mode() != fs.ModeSetuid|0o755 {
		t.Errorf("usr/bin/suid: mode %v (err %v), want setuid kept", fi.Mode(), err)
	}
	if sum.SetIDCleared != 0 {
		t.Errorf("SetIDCleared = %d, want 0 as root", sum.SetIDCleared)
	}
}

// Not as root, setuid bits are dropped and counted.
func TestUnpackNotAsRoot(t *testing.T) {
	dir, sum := unpacked(t, false)
	if fi, err := os.Stat(filepath.Join(dir, "usr/bin/suid")); err != nil || fi.Mode() != 0o755 {
		t.Errorf("usr/bin/suid: mode %v (err %v), want 0755 without setuid", fi.Mode(), err)
	}
	if sum.SetIDCleared != 1 {
		t.Errorf("SetIDCleared = %d, want 1 (usr/bin/suid)", sum.SetIDCleared)
	}
	fi, err := os.Stat(filepath.Join(dir, "home/user/file"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("home/user/file belongs to %d, want the caller %d", st.Uid, os.Geteuid())
	}
}

func TestUnpackNeedsAnEmptyDirectory(t *testing.T) {
	im := mustOpen(t, writeTarball(t, baseImage(t), "app:1"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := im.Unpack(dir); err == nil || !strings.Contains(err.Error(), "expected an empty or absent directory") {
		t.Errorf("a directory holding x: err = %v, want one asking for an empty directory", err)
	}
}

// A layer whose entry climbs out of the root with .. is refused, and
// nothing lands outside the root.
func TestUnpackRefusesDotDot(t *testing.T) {
	evil := image(t, v1.Config{}, layer(t, fileE("ok", 0o644, "ok"), fileE("../escape", 0o644, "owned")))
	im := mustOpen(t, writeTarball(t, evil, "evil:1"))
	parent := t.TempDir()
	_, err := im.Unpack(filepath.Join(parent, "rootfs"))
	if err == nil || !strings.Contains(err.Error(), "../escape") {
		t.Errorf("err = %v, want one naming ../escape", err)
	}
	if _, err := os.Lstat(filepath.Join(parent, "escape")); !os.IsNotExist(err) {
		t.Errorf("%s/escape exists (err %v): an entry left the root", parent, err)
	}
	if _, err := im.LookPath("/ok", ""); err == nil {
		t.Errorf("LookPath in an image with a .. entry succeeded, want an error")
	}
}

// The unpacker's own checks, for entries the flattening already drops:
// nothing is written through a symbolic link or outside the root.
func TestUnpackerNeverLeavesTheRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	u := &unpacker{root: root, real: map[string]bool{".": true}}
	must := func(h *tar.Header, body string) error {
		return u.entry(h, strings.NewReader(body))
	}
	if err := must(&tar.Header{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: outside}, ""); err != nil {
		t.Fatalf("a symbolic link pointing out is written as a link: %v", err)
	}
	bad := []struct {
		hdr  *tar.Header
		want string
	}{
		{&tar.Header{Name: "evil/owned", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5}, "symbolic link"},
		{&tar.Header{Name: "evil/dir", Typeflag: tar.TypeDir, Mode: 0o755}, "symbolic link"},
		{&tar.Header{Name: "a/../../escape", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5}, "climbs out"},
		{&tar.Header{Name: "hl", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"}, "outside the image"},
	}
	for _, b := range bad {
		if err := must(b.hdr, "owned"); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("entry %s: err = %v, want it to say %q", b.hdr.Name, err, b.want)
		}
	}
	if err := must(&tar.Header{Name: "hl2", Typeflag: tar.TypeLink, Linkname: "evil/secret"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := u.finish(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a hard link through a link: err = %v, want a refusal", err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only secret: an entry left the root", outside, len(entries))
	}
	if _, err := os.Lstat(filepath.Join(dir, "hl2")); !os.IsNotExist(err) {
		t.Errorf("hl2 was made (err %v), want no hard link to a file outside the root", err)
	}
}

// A layer whose bytes are not those its digest names fails Unpack and
// LookPath, rather than giving a partial root filesystem.
func TestCorruptLayer(t *testing.T) {
	img := baseImage(t)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := layers[1].Digest()
	if err != nil {
		t.Fatal(err)
	}
	another := func([]byte) []byte {
		rc, _ := layers[0].Compressed()
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return b
	}
	cases := []struct {
		name    string
		corrupt func([]byte) []byte
		want    string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, "unexpected EOF"},
		{"another layer's", another, "the archive is corrupt"},
	}
	for _, c := range cases {
		corrupt, want := c.corrupt, c.want
		t.Run(c.name, func(t *testing.T) {
			dir := writeLayout(t, map[string]v1.Image{"app:1": img})
			blob := filepath.Join(dir, "blobs", digest.Algorithm, digest.Hex)
			b, err := os.ReadFile(blob)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(blob, corrupt(b), 0o644); err != nil {
				t.Fatal(err)
			}
			im := mustOpen(t, dir)
			if _, err := im.Unpack(filepath.Join(t.TempDir(), "rootfs")); err == nil || !strings.Contains(err.Error(), "reading its layers") || !strings.Contains(err.Error(), want) {
				t.Errorf("Unpack: err = %v, want one about the layers saying %q", err, want)
			}
			if _, err := im.LookPath("app", ""); err == nil {
				t.Errorf("LookPath succeeded on a corrupt image, want an error")
			}
		})
	}
}
