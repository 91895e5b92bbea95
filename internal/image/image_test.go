package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// staticBinary builds testdata/hello with CGO_ENABLED=0 into a temp dir.
func staticBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ctrbench")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/hello")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building static test binary: %v\n%s", err, b)
	}
	return out
}

func tarBytes(t *testing.T, c *Context) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.WriteTar(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestStaticCheck(t *testing.T) {
	bin := staticBinary(t)
	if err := checkStatic(bin); err != nil {
		t.Errorf("static Go binary rejected: %v", err)
	}
	err := checkStatic("/bin/ls")
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("checkStatic(/bin/ls) = %v, want a dynamically-linked error", err)
	}
	if _, err := Plan(Input{Binary: "/bin/ls"}); err == nil {
		t.Error("Plan accepted a dynamic ctrbench binary")
	}
	notELF := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if err := checkStatic(notELF); err == nil {
		t.Error("checkStatic accepted a non-ELF file")
	}
}

func TestPlanDeterministic(t *testing.T) {
	bin := staticBinary(t)
	in := Input{Binary: bin, Tools: []string{"ls", "ls", "no-such-tool-ctrbench"}}
	a, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	if a.Tag != b.Tag {
		t.Errorf("tags differ: %s vs %s", a.Tag, b.Tag)
	}
	if !strings.HasPrefix(a.Tag, "ctrbench-agent:") || len(a.Tag) != len("ctrbench-agent:")+16 {
		t.Errorf("tag %q: want ctrbench-agent:<16 hex>", a.Tag)
	}
	if !bytes.Equal(tarBytes(t, a), tarBytes(t, b)) {
		t.Error("tars of identical inputs differ")
	}
	if !reflect.DeepEqual(a.Missing, []string{"no-such-tool-ctrbench"}) {
		t.Errorf("Missing = %v", a.Missing)
	}
}

func TestTagChangesWithContent(t *testing.T) {
	bin := staticBinary(t)
	a, err := Plan(Input{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	b, err := Plan(Input{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if a.Tag == b.Tag {
		t.Error("tag unchanged after the binary changed")
	}
	c, err := Plan(Input{Binary: bin, Tools: []string{"ls"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tag == b.Tag {
		t.Error("tag unchanged after adding a tool")
	}
	// A mode change alone must change the tag too.
	d := *b
	d.Files = append([]File(nil), b.Files...)
	for i := range d.Files {
		if d.Files[i].Path == BinaryPath {
			d.Files[i].Mode = 0o700
		}
	}
	if d.hash() == b.hash() {
		t.Error("hash unchanged after a mode change")
	}
}

func TestTarContents(t *testing.T) {
	bin := staticBinary(t)
	c, err := Plan(Input{Binary: bin, Tools: []string{"ls"}})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]*tar.Header{}
	var names []string
	tr := tar.NewReader(bytes.NewReader(tarBytes(t, c)))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: uid %d gid %d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
	}
	for i := 2; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("entries not sorted: %q before %q", names[i-1], names[i])
		}
	}
	if names[0] != "Dockerfile" {
		t.Errorf("first entry %q, want Dockerfile", names[0])
	}
	want := map[string]int64{
		"rootfs/ctrbench":                       0o755,
		"rootfs/tmp/":                           0o1777,
		"rootfs/etc/passwd":                     0o644,
		"rootfs/etc/group":                      0o644,
		"rootfs/usr/bin/ls":                     0o755,
		"rootfs/lib64/ld-linux-x86-64.so.2":     -1,
		"rootfs/lib/x86_64-linux-gnu/libc.so.6": -1,
	}
	for name, mode := range want {
		h, ok := entries[name]
		if !ok {
			t.Errorf("missing entry %s", name)
			continue
		}
		if mode >= 0 && h.Mode != mode {
			t.Errorf("%s: mode %o, want %o", name, h.Mode, mode)
		}
	}
	// The loader is a symlink on the host; the image holds its content.
	if h := entries["rootfs/lib64/ld-linux-x86-64.so.2"]; h != nil && (h.Typeflag != tar.TypeReg || h.Size == 0) {
		t.Errorf("loader entry: type %c size %d, want a regular file with content", h.Typeflag, h.Size)
	}
	if !strings.Contains(c.Dockerfile, `ENTRYPOINT ["/ctrbench"]`) || !strings.HasPrefix(c.Dockerfile, "FROM scratch") {
		t.Errorf("Dockerfile:\n%s", c.Dockerfile)
	}
	for _, f := range c.Files {
		if f.Path == "/tmp" && f.Mode != fs.ModeDir|fs.ModeSticky|0o777 {
			t.Errorf("/tmp mode %v", f.Mode)
		}
	}
}

func TestParseLddReal(t *testing.T) {
	out, err := exec.Command("ldd", "/bin/ls").Output()
	if err != nil {
		t.Skipf("ldd unavailable: %v", err)
	}
	libs, err := ParseLdd(string(out))
	if err != nil {
		t.Fatal(err)
	}
	var haveLibc, haveLoader bool
	for _, l := range libs {
		if !filepath.IsAbs(l) {
			t.Errorf("relative path %q", l)
		}
		if strings.Contains(l, "vdso") {
			t.Errorf("vdso listed: %q", l)
		}
		haveLibc = haveLibc || strings.HasSuffix(l, "/libc.so.6")
		haveLoader = haveLoader || strings.Contains(l, "/ld-linux")
	}
	if !haveLibc || !haveLoader {
		t.Errorf("libs %v: want libc and the loader", libs)
	}
}

func TestParseLddCanned(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []string
		wantErr string
	}{
		{
			name: "typical",
			out: "\tlinux-vdso.so.1 (0x00007ffd)\n" +
				"\tlibiperf.so.0 => /lib/x86_64-linux-gnu/libiperf.so.0 (0x00007f1a)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1b)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f1c)\n",
			want: []string{"/lib/x86_64-linux-gnu/libiperf.so.0", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"},
		},
		{
			name: "old vdso style and duplicates",
			out: "\tlinux-gate.so.1 =>  (0x00007ffd)\n" +
				"\tlibm.so.6 => /lib/libm.so.6 (0x1)\n" +
				"\tlibm.so.6 => /lib/libm.so.6 (0x1)\n",
			want: []string{"/lib/libm.so.6"},
		},
		{
			name: "static",
			out:  "\tnot a dynamic executable\n",
		},
		{
			name: "statically linked",
			out:  "\tstatically linked\n",
		},
		{
			name:    "not found",
			out:     "\tlibfoo.so.1 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n",
			wantErr: "libfoo.so.1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLdd(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPlanNoBinary(t *testing.T) {
	if _, err := Plan(Input{}); err == nil {
		t.Error("Plan without a binary succeeded")
	}
	if _, err := Plan(Input{Binary: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Error("Plan with an absent binary succeeded")
	}
}
