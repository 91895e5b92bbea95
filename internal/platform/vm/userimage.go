package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/userimage"
	"github.com/ctrbench/ctrbench/internal/vminit"
)

// envPath is the PATH a user's image without one runs with.
const envPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// userInitrd is a user's image made a machine's initramfs.
type userInitrd struct {
	initramfs
	digest string // the image's ID (its configuration's digest)
}

// userImages makes each user's image an initramfs of its own, once per
// image, agent binary and kernel: the image's files (layers flattened,
// whiteouts honoured), the agent at /ctrbench as init, the kernel's
// modules, and the image's environment for the agent (vminit.ImageEnvFile).
func (p *Platform) userImages(ctx context.Context, imgs []platform.Image, save platform.SaveImage, progress io.Writer) error {
	for _, img := range imgs {
		if _, done := p.users[img.Key()]; done {
			continue
		}
		im, err := userimage.OpenSource(ctx, img.Ref, img.Archive, save)
		if err != nil {
			return fmt.Errorf("vm: %w", err)
		}
		u, err := p.userInitramfs(im)
		im.Close()
		if err != nil {
			return fmt.Errorf("vm: image %s: %w", img, err)
		}
		if p.users == nil {
			p.users = map[string]userInitrd{}
		}
		p.users[img.Key()] = u
		fmt.Fprintf(progress, "vm: initramfs %s of %s (%d files)\n", u.Path, img, u.Files)
	}
	return nil
}

func (p *Platform) userInitramfs(im *userimage.Image) (userInitrd, error) {
	u := userInitrd{digest: im.Digest()}
	modules, err := kernelModules(p.kernel)
	if err != nil {
		return u, err
	}
	bin, err := os.ReadFile(p.binary)
	if err != nil {
		return u, err
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "user %s\n%s\n", im.Digest(), p.kernel.Version)
	sum.Write(bin)
	hash := hex.EncodeToString(sum.Sum(nil))[:16]
	if _, err := os.Stat(filepath.Join(ImageRoot, hash+".cpio")); err == nil {
		u.initramfs = initramfs{Path: filepath.Join(ImageRoot, hash+".cpio"), Hash: hash}
		return u, nil
	}
	dir, err := os.MkdirTemp("", "ctrbench-vm-image-")
	if err != nil {
		return u, err
	}
	defer userimage.RemoveUnpacked(dir)
	if _, err := im.Unpack(filepath.Join(dir, "root")); err != nil {
		return u, err
	}
	files, err := treeFiles(filepath.Join(dir, "root"))
	if err != nil {
		return u, err
	}
	cfg := im.Config()
	argv, _ := cfg.Command(nil)
	env, _ := json.Marshal(invocation.ImageEnv(cfg.Env, cfg.WorkingDir, argv, envPath))
	extra := append(machineFiles(modules), image.File{Path: image.BinaryPath, Mode: 0o755, Data: bin},
		image.File{Path: vminit.ImageEnvFile, Mode: 0o644, Data: env})
	for _, m := range modules {
		b, err := os.ReadFile(m)
		if err != nil {
			return u, err
		}
		extra = append(extra, image.File{Path: m, Mode: 0o644, Data: b})
	}
	u.initramfs, err = writeInitramfs(&image.Context{Files: files}, extra, hash)
	return u, err
}

// treeFiles are the files, directories and symbolic links under root, as
// an image's (other kinds were not unpacked).
func treeFiles(root string) ([]image.File, error) {
	var files []image.File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		f := image.File{Path: "/" + filepath.ToSlash(rel)}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			f.Mode = fs.ModeDir | info.Mode().Perm()
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			f.Mode, f.Data = fs.ModeSymlink|0o777, []byte(target)
		case d.Type().IsRegular():
			if f.Data, err = os.ReadFile(path); err != nil {
				return err
			}
			f.Mode = info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		default:
			return nil
		}
		files = append(files, f)
		return nil
	})
	return files, err
}
