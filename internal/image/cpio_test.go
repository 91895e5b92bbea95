package image

import (
	"bytes"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
)

// TestCpioListsAsGNUCpioReadsIt: the archive is what GNU cpio reads as
// newc, with every parent directory before its files, and the same bytes
// each time.
func TestCpioListsAsGNUCpioReadsIt(t *testing.T) {
	if _, err := exec.LookPath("cpio"); err != nil {
		t.Skip("no cpio here")
	}
	c := &Context{Files: []File{
		{Path: "/ctrbench", Mode: 0o755, Data: []byte("#!binary")},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/usr/lib/x/libfoo.so.1", Mode: 0o644, Data: []byte("lib!!")},
	}}
	var a, b bytes.Buffer
	if err := c.WriteCpio(&a, File{Path: "/lib/modules/order", Mode: 0o644, Data: []byte("x.ko\n")}); err != nil {
		t.Fatal(err)
	}
	_ = c.WriteCpio(&b, File{Path: "/lib/modules/order", Mode: 0o644, Data: []byte("x.ko\n")})
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same content differ")
	}
	cmd := exec.Command("cpio", "-itv", "--quiet")
	cmd.Stdin = bytes.NewReader(a.Bytes())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cpio: %v", err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		names = append(names, f[0][:1]+" "+f[len(f)-1])
	}
	want := "- ctrbench,d lib,d lib/modules,- lib/modules/order,d tmp,d usr,d usr/lib,d usr/lib/x,- usr/lib/x/libfoo.so.1"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("entries\n got %s\nwant %s\n%s", got, want, out)
	}
	if !strings.Contains(string(out), "drwxrwxrwt") || !strings.Contains(string(out), "-rwxr-xr-x") {
		t.Fatalf("modes lost:\n%s", out)
	}
}
