package userimage

import (
	"strings"
	"testing"
)

func TestLookPath(t *testing.T) {
	im := mustOpen(t, writeTarball(t, baseImage(t), "app:1"))
	found := []struct{ file, search, want string }{
		{"app", "", "/usr/bin/app"},           // the image's PATH
		{"tool", "", "/usr/local/bin/tool"},   // an absolute symbolic link to /usr/bin/app
		{"app-hard", "", "/usr/bin/app-hard"}, // a hard link
		{"hl-upper", "", "/usr/bin/hl-upper"}, // a hard link to a lower layer's file
		{"app", "/sbin:/bin", "/bin/app"},     // through bin -> usr/bin
		{"/bin/app", "", "/bin/app"},          // a path, through the same link
		{"./app", "", "/usr/bin/app"},         // relative to the working directory
		{"../local/bin/tool", "", "/usr/local/bin/tool"},
		{"app", "nowhere:.", "/usr/bin/app"}, // a relative PATH entry is the working directory's
	}
	for _, c := range found {
		got, err := im.LookPath(c.file, c.search)
		if err != nil || got != c.want {
			t.Errorf("LookPath(%q, %q) = %q, %v; want %s", c.file, c.search, got, err, c.want)
		}
	}
	missing := []struct{ file, search, want string }{
		{"data", "", "not executable"},        // mode 0644
		{"gone.txt", "/", "no executable"},    // removed by a whiteout
		{"/old/a", "", "no such file"},        // hidden by an opaque directory
		{"/dev/null", "", "character device"}, // not a program
		{"loop1", "", "symbolic links"},       // a loop
		{"bin", "/", "directory"},             // through the link, a directory
		{"/usr/bin/app/x", "", "not a directory"},
		{"sh", "", "no executable sh in PATH /usr/local/bin:/usr/bin"},
		{"", "", "empty command"},
	}
	for _, c := range missing {
		got, err := im.LookPath(c.file, c.search)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LookPath(%q, %q) = %q, %v; want an error saying %q", c.file, c.search, got, err, c.want)
		}
	}
}
