package image

import (
	"fmt"
	"strings"
)

// UserRepository is the name part of the images that put ctrbench's agent
// into a user's image.
const UserRepository = "ctrbench-user"

// Derived plans the image that runs ctrbench's agent from a user's image:
// FROM the user's image (base, by its ID in the engine, so nothing is
// pulled), the static ctrbench binary at BinaryPath as the entrypoint.
// Everything else — the user's programs, libraries, environment and
// working directory — is the user's image's. Its tag is the content hash
// of the base's ID and the binary.
func Derived(baseID, binary string) (*Context, error) {
	if !strings.HasPrefix(baseID, "sha256:") {
		return nil, fmt.Errorf("planning image: base %q is not an image ID (sha256:…)", baseID)
	}
	if err := checkStatic(binary); err != nil {
		return nil, err
	}
	b := newBuilder()
	if err := b.addHostFile(BinaryPath, binary); err != nil {
		return nil, err
	}
	b.files[BinaryPath] = withMode(b.files[BinaryPath], 0o755)
	c := &Context{Files: b.sorted(), Dockerfile: fmt.Sprintf("FROM %s\nCOPY rootfs/ /\nENTRYPOINT [%q]\n", strings.TrimPrefix(baseID, "sha256:"), BinaryPath)}
	c.Tag = UserRepository + ":" + c.hash()[:16]
	return c, nil
}
