package vm

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/vminit"
)

// ImageRoot holds the initramfs files, one per content hash, shared by
// campaigns (`ctrbench clean --images` removes them).
const ImageRoot = "/var/lib/ctrbench/vm-images"

// bootDir is where the distribution's kernels are.
var bootDir = "/boot"

// modulesDir is where their modules are.
var modulesDir = "/lib/modules"

// wantModules are the drivers of the machine's devices: the virtio PCI
// transport, the NIC and the disk.
var wantModules = []string{"virtio_pci", "virtio_net", "virtio_blk"}

// Kernel is a kernel the machines boot.
type Kernel struct {
	Version string // e.g. 6.1.0-56-cloud-amd64
	Path    string // its image, /boot/vmlinuz-<version>
}

// FindKernel picks the kernel to boot: one in /boot whose modules are
// installed, a cloud flavour (made for virtual machines) first, then the
// newest.
func FindKernel() (Kernel, error) {
	paths, _ := filepath.Glob(filepath.Join(bootDir, "vmlinuz-*"))
	var ks []Kernel
	for _, p := range paths {
		v := strings.TrimPrefix(filepath.Base(p), "vmlinuz-")
		if _, err := os.Stat(filepath.Join(modulesDir, v, "modules.dep")); err == nil {
			ks = append(ks, Kernel{Version: v, Path: p})
		}
	}
	if len(ks) == 0 {
		return Kernel{}, errors.New("no kernel to boot: /boot has no vmlinuz-* with its modules (`make setup` installs linux-image-cloud-amd64)")
	}
	sort.Slice(ks, func(i, j int) bool {
		ci, cj := strings.Contains(ks[i].Version, "cloud"), strings.Contains(ks[j].Version, "cloud")
		if ci != cj {
			return ci
		}
		return ks[i].Version > ks[j].Version
	})
	return ks[0], nil
}

// ModuleOrder lists, in load order (each module after what it needs), the
// files of the modules wanted, from modules.dep; built-in ones need no file.
func ModuleOrder(dep io.Reader, builtin map[string]bool, want []string) ([]string, error) {
	deps := map[string][]string{} // module name -> its file, then its dependencies' files
	sc := bufio.NewScanner(dep)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		file, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		deps[moduleName(file)] = append([]string{file}, strings.Fields(rest)...)
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range want {
		if builtin[w] {
			continue
		}
		d, ok := deps[w]
		if !ok {
			return nil, fmt.Errorf("module %s: not in modules.dep and not built in", w)
		}
		// modules.dep lists every module needed, the one loaded last first.
		for i := len(d) - 1; i >= 1; i-- {
			if !seen[d[i]] {
				seen[d[i]] = true
				out = append(out, d[i])
			}
		}
		if !seen[d[0]] {
			seen[d[0]] = true
			out = append(out, d[0])
		}
	}
	return out, nil
}

// moduleName is a module's name from its file ("kernel/…/virtio_net.ko").
func moduleName(file string) string {
	n := filepath.Base(file)
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		n = strings.TrimSuffix(n, ext)
	}
	return strings.ReplaceAll(strings.TrimSuffix(n, ".ko"), "-", "_")
}

// builtinModules reads modules.builtin: names of modules compiled in.
func builtinModules(kver string) map[string]bool {
	out := map[string]bool{}
	b, err := os.ReadFile(filepath.Join(modulesDir, kver, "modules.builtin"))
	if err != nil {
		return out
	}
	for _, l := range strings.Fields(string(b)) {
		out[moduleName(l)] = true
	}
	return out
}

// initramfs is a built initramfs.
type initramfs struct {
	Path  string
	Hash  string
	Files int
}

// buildInitramfs writes the machines' initramfs: the agent image's
// content (the static binary, the tools and their libraries) with the
// kernel's virtio modules and their load order, once per content.
func buildInitramfs(binary string, tools []string, k Kernel, moreModules ...string) (initramfs, error) {
	modules, err := kernelModules(k, moreModules...)
	if err != nil {
		return initramfs{}, err
	}
	plan, err := image.Plan(image.Input{Binary: binary, Tools: tools, Files: modules})
	if err != nil {
		return initramfs{}, err
	}
	extra := machineFiles(modules)
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\n%s\n", plan.Tag, k.Version, strings.Join(modules, "\n"))
	return writeInitramfs(plan, extra, hex.EncodeToString(sum.Sum(nil))[:16])
}

// kernelModules are the module files the machine loads, in load order.
func kernelModules(k Kernel, more ...string) ([]string, error) {
	dep, err := os.Open(filepath.Join(modulesDir, k.Version, "modules.dep"))
	if err != nil {
		return nil, err
	}
	order, err := ModuleOrder(dep, builtinModules(k.Version), append(slices.Clone(wantModules), more...))
	dep.Close()
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Version, err)
	}
	files := make([]string, len(order))
	for i, m := range order {
		files[i] = filepath.Join(modulesDir, k.Version, m)
	}
	return files, nil
}

// machineFiles are what every initramfs has beside its content: the list
// of modules to load and the mount points init uses.
func machineFiles(modules []string) []image.File {
	extra := []image.File{{Path: vminit.ModuleList, Mode: 0o644, Data: []byte(strings.Join(modules, "\n") + "\n")}}
	for _, d := range []string{"/proc", "/sys", "/dev", "/run", vminit.DataMount} {
		extra = append(extra, image.File{Path: d, Mode: os.ModeDir | 0o755})
	}
	return extra
}

// writeInitramfs writes plan's files and extra as ImageRoot/hash.cpio,
// unless it is there already.
func writeInitramfs(plan *image.Context, extra []image.File, hash string) (initramfs, error) {
	out := initramfs{Path: filepath.Join(ImageRoot, hash+".cpio"), Hash: hash, Files: len(plan.Files) + len(extra)}
	if _, err := os.Stat(out.Path); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(ImageRoot, 0o755); err != nil {
		return out, err
	}
	tmp, err := os.CreateTemp(ImageRoot, hash+".tmp-")
	if err != nil {
		return out, err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := plan.WriteCpio(w, extra...); err != nil {
		tmp.Close()
		return out, err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return out, err
	}
	if err := tmp.Close(); err != nil {
		return out, err
	}
	return out, os.Rename(tmp.Name(), out.Path)
}
