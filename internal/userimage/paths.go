package userimage

import (
	"fmt"
	"path"
	"strings"
)

// inRoot is where an archive entry's name puts it in the image, as an
// absolute path: a leading / is dropped, as every unpacker does, and a
// name whose .. climbs above the image's root is refused.
func inRoot(name string) (string, error) {
	rel := path.Clean(strings.TrimLeft(name, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("entry name %q climbs out of the image's root with ..: an entry must stay inside the root filesystem", name)
	}
	if rel == "." {
		return "/", nil
	}
	return "/" + rel, nil
}

// relName is an absolute path in the image as a name relative to its root,
// as os.Root takes it.
func relName(p string) string {
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}
