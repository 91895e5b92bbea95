// Package image plans the build context of the workload image: a FROM
// scratch image holding the static ctrbench binary and the external tools
// the workloads run, each with the shared libraries it links against. No
// registry is ever needed, so the image builds offline.
//
// The package is pure: it reads files from the host and writes a tar; the
// docker platform sends that tar to the daemon.
package image

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Repository is the name part of every agent image tag.
const Repository = "ctrbench-agent"

// BinaryPath is where the ctrbench binary lives inside the image.
const BinaryPath = "/ctrbench"

// Input says what goes into the image.
type Input struct {
	Binary string   // path to a statically linked ctrbench
	Tools  []string // external programs, resolved in PATH (e.g. iperf3)
	// Files are more host files, by absolute path, kept at that path with
	// the shared libraries each loads: modules a tool opens at run time
	// (iptables' extensions), which ldd of the tool does not list.
	Files []string
	// Repository names the image ("ctrbench-agent" when empty); its tag is
	// the content hash either way.
	Repository string
}

// File is one entry of the image's root filesystem.
type File struct {
	Path   string      // absolute path inside the image
	Mode   fs.FileMode // permission bits, plus fs.ModeDir for directories (fs.ModeSymlink for a link, in a cpio archive only)
	Data   []byte      // content (a link's target); nil for directories
	Source string      // host path it was read from; "" for generated files
}

// Context is a planned build context.
type Context struct {
	Tag        string   // Repository + ":" + content hash
	Files      []File   // sorted by Path; parents precede children
	Dockerfile string   // the Dockerfile at the context's root
	Missing    []string // tools not found on the host
}

const dockerfile = "FROM scratch\nCOPY rootfs/ /\nENV " + imagePath + "\nENTRYPOINT [\"" + BinaryPath + "\"]\n"

// Minimal identity and name-service files: enough for tools that look up
// the current user or resolve "localhost".
var etcFiles = map[string]string{
	"/etc/passwd":        "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
	"/etc/group":         "root:x:0:\nnogroup:x:65534:\n",
	"/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
	"/etc/hosts":         "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
}

// Plan resolves every input on the host and returns the context to build.
// A tool that is not installed is listed in Missing rather than failing the
// plan: only the workloads that need it will fail, naming it.
func Plan(in Input) (*Context, error) {
	if in.Binary == "" {
		return nil, errors.New("planning image: no ctrbench binary given")
	}
	if err := checkStatic(in.Binary); err != nil {
		return nil, err
	}
	b := newBuilder()
	if err := b.addHostFile(BinaryPath, in.Binary); err != nil {
		return nil, err
	}
	b.files[BinaryPath] = withMode(b.files[BinaryPath], 0o755)
	for p, content := range etcFiles {
		b.add(File{Path: p, Mode: 0o644, Data: []byte(content)})
	}
	b.add(File{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777})
	b.add(File{Path: "/root", Mode: fs.ModeDir | 0o700})

	var missing []string
	for _, tool := range dedupe(in.Tools) {
		binDir, _ := filepath.Abs(filepath.Dir(in.Binary))
		found, err := b.addTool(tool, binDir)
		if err != nil {
			return nil, err
		}
		if !found {
			missing = append(missing, tool)
		}
	}
	for _, f := range in.Files {
		if !path.IsAbs(f) {
			return nil, fmt.Errorf("planning image: file %q is not an absolute path", f)
		}
		libs, err := sharedLibs(f)
		if err != nil {
			return nil, fmt.Errorf("file %q: %w", f, err)
		}
		for _, p := range append([]string{f}, libs...) {
			if err := b.addHostFile(p, p); err != nil {
				return nil, err
			}
		}
	}
	repo := in.Repository
	if repo == "" {
		repo = Repository
	}
	c := &Context{Files: b.sorted(), Dockerfile: dockerfile, Missing: missing}
	c.Tag = repo + ":" + c.hash()[:16]
	return c, nil
}

// checkStatic rejects a binary that needs a dynamic loader: the image has
// no libc for it unless we copy one, and ctrbench is meant to be static.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("reading ctrbench binary %q: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("ctrbench binary %q is dynamically linked; build it with CGO_ENABLED=0", p)
		}
	}
	return nil
}

type builder struct{ files map[string]File }

func newBuilder() *builder { return &builder{files: map[string]File{}} }

func (b *builder) add(f File) {
	b.files[f.Path] = f
	for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
		if _, ok := b.files[dir]; !ok {
			b.files[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
}

// addHostFile copies host file src to dst in the image. Symlinks are
// followed: the target's content is stored under the linked name, which is
// the path the loader and PATH lookups ask for.
func (b *builder) addHostFile(dst, src string) error {
	if _, ok := b.files[dst]; ok {
		return nil
	}
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("reading %q: %w", src, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("reading %q: not a regular file", src)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading %q: %w", src, err)
	}
	b.add(File{Path: dst, Mode: st.Mode().Perm(), Data: data, Source: src})
	return nil
}

// HelperDir is where programs found beside the ctrbench binary (the C
// kernels the Makefile builds, e.g. ctb-linpack) go in the image: a
// directory on the image's PATH.
const HelperDir = "/usr/local/bin"

// addTool adds a program and every shared object it loads. A program beside
// the ctrbench binary (binDir) is one of ctrbench's own helpers and goes to
// HelperDir; one found in PATH keeps its host path.
func (b *builder) addTool(name, binDir string) (bool, error) {
	dst := ""
	p := filepath.Join(binDir, name)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 && path.IsAbs(p) {
		dst = path.Join(HelperDir, name)
	} else {
		lp, err := exec.LookPath(name)
		if err != nil {
			return false, nil
		}
		p, dst = lp, lp
	}
	if !path.IsAbs(p) {
		return false, fmt.Errorf("tool %q resolved to relative path %q", name, p)
	}
	libs, err := sharedLibs(p)
	if err != nil {
		return false, fmt.Errorf("tool %q: %w", name, err)
	}
	if err := b.addHostFile(dst, p); err != nil {
		return false, fmt.Errorf("tool %q: %w", name, err)
	}
	for _, lib := range libs {
		if err := b.addHostFile(lib, lib); err != nil {
			return false, fmt.Errorf("tool %q: %w", name, err)
		}
	}
	return true, nil
}

// sharedLibs lists the absolute paths ldd reports for a dynamic program,
// the loader included; nil for a static one.
func sharedLibs(p string) ([]string, error) {
	f, err := elf.Open(p)
	if err != nil {
		// A script or other non-ELF file: nothing to resolve here.
		return nil, nil
	}
	dynamic := false
	for _, prog := range f.Progs {
		// A program has an interpreter; a shared object only a dynamic
		// section: both load libraries.
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			dynamic = true
		}
	}
	f.Close()
	if !dynamic {
		return nil, nil
	}
	out, err := exec.Command("ldd", p).Output()
	if err != nil {
		return nil, fmt.Errorf("running ldd %s: %w", p, err)
	}
	return ParseLdd(string(out))
}

// ParseLdd extracts library paths from ldd output. Lines are either
// "name => /path (0xaddr)", "/path (0xaddr)" (the loader),
// "name (0xaddr)" (the vDSO, which has no file) or "name => not found",
// which is an error: the tool could not run on the host either.
func ParseLdd(out string) ([]string, error) {
	var libs, notFound []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, "statically linked") || strings.Contains(line, "not a dynamic executable") {
			continue
		}
		target := line
		if name, rest, ok := strings.Cut(line, "=>"); ok {
			target = strings.TrimSpace(rest)
			if strings.HasPrefix(target, "not found") {
				notFound = append(notFound, strings.TrimSpace(name))
				continue
			}
		}
		if i := strings.Index(target, " ("); i >= 0 {
			target = target[:i]
		} else if strings.HasPrefix(target, "(") {
			target = ""
		}
		target = strings.TrimSpace(target)
		if !strings.HasPrefix(target, "/") {
			continue // vDSO, or an old-style "name => (0xaddr)" line
		}
		libs = append(libs, target)
	}
	if len(notFound) > 0 {
		return nil, fmt.Errorf("shared libraries not found on host: %s", strings.Join(notFound, ", "))
	}
	return dedupe(libs), nil
}

func (b *builder) sorted() []File {
	files := make([]File, 0, len(b.files))
	for _, f := range b.files {
		files = append(files, f)
	}
	// Sorting by path puts "/a" before "/a/b", so parents come first.
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files
}

// hash covers everything that ends up in the image, so the tag changes
// exactly when a rebuild is needed.
func (c *Context) hash() string {
	h := sha256.New()
	for _, f := range c.Files {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", f.Path, strconv.FormatUint(uint64(tarMode(f.Mode)), 8), len(f.Data))
		h.Write(f.Data)
		if f.Mode.IsDir() {
			h.Write([]byte("dir"))
		}
		h.Write([]byte{0})
	}
	fmt.Fprintf(h, "Dockerfile\x00%d\x00%s", len(c.Dockerfile), c.Dockerfile)
	return hex.EncodeToString(h.Sum(nil))
}

func withMode(f File, perm fs.FileMode) File {
	f.Mode = f.Mode&^fs.ModePerm | perm
	return f
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// EnginePrograms are the programs an image that runs a Docker Engine
// inside carries (a nested parent, a swarm node, a virtual machine with an
// engine): dockerd, its userland proxy (Docker 28 refuses to start
// without it: "userland-proxy is enabled, but userland-proxy-path is not
// set"; 20.10 looked for it only when a port was published), containerd,
// its shim and runtime, and the init it gives containers.
var EnginePrograms = []string{"dockerd", "docker-proxy", "containerd", "containerd-shim-runc-v2", "runc", "docker-init"}
