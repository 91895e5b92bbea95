package lxc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/userimage"
)

// userRootfs is a user's image as LXC runs it: the image unpacked with the
// agent at image.BinaryPath, shared by campaigns as the agent's root file
// system is (RootfsRoot), and the environment its containers get.
type userRootfs struct {
	dir    string
	env    []string
	digest string
}

// userImages unpacks each user's image (an archive) into a root file
// system, once per image and agent binary.
func (p *Platform) userImages(ctx context.Context, imgs []platform.Image, save platform.SaveImage, progress io.Writer) error {
	for _, img := range imgs {
		if _, done := p.users[img.Key()]; done {
			continue
		}
		im, err := userimage.OpenSource(ctx, img.Ref, img.Archive, save)
		if err != nil {
			return fmt.Errorf("lxc platform: %w", err)
		}
		u, err := p.userRootfs(im, progress)
		im.Close()
		if err != nil {
			return fmt.Errorf("lxc platform: image %s: %w", img, err)
		}
		if p.users == nil {
			p.users = map[string]userRootfs{}
		}
		p.users[img.Key()] = u
	}
	return nil
}

// userRootfs writes (or finds) the root file system of im.
func (p *Platform) userRootfs(im *userimage.Image, progress io.Writer) (userRootfs, error) {
	cfg := im.Config()
	argv, _ := cfg.Command(nil)
	env := invocation.ImageEnv(cfg.Env, cfg.WorkingDir, argv, envPath)
	bin, err := os.ReadFile(p.binary)
	if err != nil {
		return userRootfs{}, err
	}
	sum := sha256.Sum256(append([]byte(im.Digest()+"\x00"), bin...))
	dir := filepath.Join(RootfsRoot, "user-"+hex.EncodeToString(sum[:8]))
	u := userRootfs{dir: dir, env: env, digest: im.Digest()}
	if _, err := os.Stat(filepath.Join(dir, image.BinaryPath)); err == nil {
		fmt.Fprintf(progress, "lxc: root file system %s of %s (cached)\n", dir, im.Source())
		return u, nil
	}
	if err := os.MkdirAll(RootfsRoot+"-tmp", 0o700); err != nil {
		return u, err
	}
	tmp, err := os.MkdirTemp(RootfsRoot+"-tmp", "user-")
	if err != nil {
		return u, err
	}
	defer userimage.RemoveUnpacked(tmp)
	root := filepath.Join(tmp, "rootfs")
	sum2, err := im.Unpack(root)
	if err != nil {
		return u, err
	}
	if err := os.WriteFile(filepath.Join(root, image.BinaryPath), bin, 0o755); err != nil {
		return u, err
	}
	if err := makeMountPoints(root); err != nil {
		return u, err
	}
	if err := os.MkdirAll(RootfsRoot, 0o755); err != nil {
		return u, err
	}
	if err := os.Rename(root, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, image.BinaryPath)); serr == nil {
			return u, nil // another campaign wrote the same content meanwhile
		}
		return u, fmt.Errorf("root file system %s: %w", dir, err)
	}
	fmt.Fprintf(progress, "lxc: unpacked %s into %s (%d files, %.1f MiB)\n", im.Source(), dir, sum2.Files, float64(sum2.Bytes)/(1<<20))
	return u, nil
}
