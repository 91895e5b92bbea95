package userimage

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// One image saved three ways reads the same: its digest is the ID of its
// configuration, and its configuration is what was written.
func TestFormatsAgree(t *testing.T) {
	img := baseImage(t)
	want, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	archives := map[string]string{
		"tarball.Write (gzipped layers)":      writeTarball(t, img, "example.com/app:1"),
		"docker save (uncompressed layers)":   writeFile(t, writeDockerSave(t, img, []string{"example.com/app:1"}, true)),
		"OCI layout in a tar (skopeo's form)": tarDir(t, writeLayout(t, map[string]v1.Image{"example.com/app:1": img})),
	}
	wantConfig := Config{
		Entrypoint:   []string{"/usr/bin/app"},
		Cmd:          []string{"--flag"},
		Env:          []string{"PATH=/usr/local/bin:/usr/bin", "A=1"},
		WorkingDir:   "/usr/bin",
		User:         "1000:1000",
		ExposedPorts: []Port{{53, "udp"}, {80, "tcp"}, {8080, "tcp"}, {9000, "tcp"}, {9001, "tcp"}},
		OS:           "linux",
		Architecture: "amd64",
	}
	for form, p := range archives {
		t.Run(form, func(t *testing.T) {
			im := mustOpen(t, p)
			if im.Digest() != want.String() {
				t.Errorf("Digest() = %s, want %s", im.Digest(), want)
			}
			if got := im.RepoTags(); !reflect.DeepEqual(got, []string{"example.com/app:1"}) {
				t.Errorf("RepoTags() = %q, want [example.com/app:1]", got)
			}
			if got := im.Config(); !reflect.DeepEqual(got, wantConfig) {
				t.Errorf("Config() =\n%+v\nwant\n%+v", got, wantConfig)
			}
			if got, err := im.LookPath("tool", ""); err != nil || got != "/usr/local/bin/tool" {
				t.Errorf(`LookPath("tool") = %q, %v; want /usr/local/bin/tool`, got, err)
			}
		})
	}
}

func TestOpenLayoutDirectory(t *testing.T) {
	img := baseImage(t)
	im := mustOpen(t, writeLayout(t, map[string]v1.Image{"app:1": img}))
	want, _ := img.ConfigName()
	if im.Digest() != want.String() || !reflect.DeepEqual(im.RepoTags(), []string{"app:1"}) {
		t.Errorf("Digest() = %s, RepoTags() = %q; want %s, [app:1]", im.Digest(), im.RepoTags(), want)
	}
}

// An OCI archive is read from a temporary copy; Close removes it.
func TestCloseRemovesTheLayoutCopy(t *testing.T) {
	tmp := t.TempDir()
	p := tarDir(t, writeLayout(t, map[string]v1.Image{"app:1": baseImage(t)}))
	im, err := Open(p, WithTempDir(tmp))
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
		t.Fatalf("%s holds %d entries while the image is open, want its one copy", tmp, len(entries))
	}
	root := filepath.Join(t.TempDir(), "root")
	if _, err := im.Unpack(root); err != nil {
		t.Fatalf("Unpack from the copy: %v", err)
	}
	if err := RemoveUnpacked(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("%s is there after RemoveUnpacked (err %v)", root, err)
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("%s holds %v after Close, want nothing", tmp, entries)
	}
}

// The engine hands over a docker save stream through an opener, called
// once per pass.
func TestFromOpener(t *testing.T) {
	img := baseImage(t)
	saved := writeDockerSave(t, img, []string{"app:1"}, true)
	calls := 0
	opener := func() (io.ReadCloser, error) {
		calls++
		return io.NopCloser(bytes.NewReader(saved)), nil
	}
	im, err := FromOpener(opener, WithTag("app:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	want, _ := img.ConfigName()
	if im.Digest() != want.String() {
		t.Errorf("Digest() = %s, want %s", im.Digest(), want)
	}
	if got, err := im.LookPath("app", ""); err != nil || got != "/usr/bin/app" {
		t.Errorf(`LookPath("app") = %q, %v; want /usr/bin/app`, got, err)
	}
	if calls < 2 {
		t.Errorf("the opener was called %d times; the stream is read in several passes", calls)
	}
	_, err = FromOpener(func() (io.ReadCloser, error) { return nil, errors.New("engine gone") })
	if err == nil || !strings.Contains(err.Error(), "engine gone") {
		t.Errorf("an opener that fails: err = %v, want its error", err)
	}
}

func TestChooseByTag(t *testing.T) {
	a := image(t, v1.Config{Cmd: []string{"a"}}, layer(t, fileE("a", 0o755, "a")))
	b := image(t, v1.Config{Cmd: []string{"b"}}, layer(t, fileE("b", 0o755, "b")))
	da, _ := a.ConfigName()
	db, _ := b.ConfigName()
	refs := map[name.Reference]v1.Image{}
	for tag, img := range map[string]v1.Image{"a:1": a, "b:2": b} {
		ref, err := name.NewTag(tag)
		if err != nil {
			t.Fatal(err)
		}
		refs[ref] = img
	}
	docker := filepath.Join(t.TempDir(), "two.tar")
	f, err := os.Create(docker)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	oci := tarDir(t, writeLayout(t, map[string]v1.Image{"a:1": a, "docker.io/library/b:2": b}))
	for form, p := range map[string]string{"docker save": docker, "OCI": oci} {
		t.Run(form, func(t *testing.T) {
			for tag, want := range map[string]v1.Hash{"a:1": da, "b:2": db, "index.docker.io/library/b:2": db} {
				im := mustOpen(t, p, WithTag(tag))
				if im.Digest() != want.String() {
					t.Errorf("WithTag(%s): Digest() = %s, want %s", tag, im.Digest(), want)
				}
			}
			_, err := Open(p)
			if err == nil || !strings.Contains(err.Error(), "2 images") || !strings.Contains(err.Error(), "a:1") || !strings.Contains(err.Error(), "b:2") {
				t.Errorf("no tag: err = %v, want one listing both images' tags", err)
			}
			_, err = Open(p, WithTag("c:3"))
			if err == nil || !strings.Contains(err.Error(), "no image tagged c:3") || !strings.Contains(err.Error(), "a:1") {
				t.Errorf("an unknown tag: err = %v, want one naming it and the tags there are", err)
			}
		})
	}
}

// A multi-platform image gives the variant for this machine.
func TestMultiPlatformIndex(t *testing.T) {
	here := image(t, v1.Config{Cmd: []string{"here"}}, layer(t, fileE("here", 0o755, "x")))
	other := image(t, v1.Config{Cmd: []string{"other"}}, layer(t, fileE("other", 0o755, "x")))
	otherArch := "s390x"
	if runtime.GOARCH == otherArch {
		otherArch = "riscv64"
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}},
		mutate.IndexAddendum{Add: here, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
	)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{ociRefName: "multi:1"})); err != nil {
		t.Fatal(err)
	}
	im := mustOpen(t, tarDir(t, dir))
	if got := im.Config().Cmd; !reflect.DeepEqual(got, []string{"here"}) {
		t.Errorf("Config().Cmd = %q, want the linux/%s variant's [here]", got, runtime.GOARCH)
	}

	only := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}})
	dir = t.TempDir()
	if p, err = layout.Write(dir, empty.Index); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(only); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), "linux/"+runtime.GOARCH) || !strings.Contains(err.Error(), otherArch) {
		t.Errorf("no variant for this machine: err = %v, want one naming this machine's and the image's platforms", err)
	}
}

func TestOpenErrors(t *testing.T) {
	img := baseImage(t)
	saved := writeDockerSave(t, img, []string{"app:1"}, true)
	var gz bytes.Buffer
	gz.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0})
	gz.Write(saved[:100])
	neither := layerTar(t, fileE("hello.txt", 0o644, "hello\n"), dirE("etc", 0o755))
	cases := []struct {
		name    string
		archive []byte
		want    []string
	}{
		{"not a tar", bytes.Repeat([]byte("this is no tar archive\n"), 100), []string{"not a tar archive", "accepted"}},
		{"empty", nil, []string{"holds no entries", "accepted"}},
		{"truncated", saved[:len(saved)/2], []string{"truncated", "ends inside entry"}},
		{"neither format", neither, []string{"neither a docker save archive", "manifest.json", "oci-layout", "accepted"}},
		{"gzipped", gz.Bytes(), []string{"compressed with gzip", "gunzip"}},
		{"layers missing", writeDockerSave(t, img, []string{"app:1"}, false), []string{"lacks", "layer.tar", "incomplete"}},
		{"bad manifest.json", layerTar(t, fileE("manifest.json", 0o644, "{not json")), []string{"manifest.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, c.archive)
			_, err := Open(p)
			if err == nil {
				t.Fatalf("Open(%s) succeeded, want an error", c.name)
			}
			for _, w := range append(c.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent.tar")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an absent archive: err = %v, want one that is os.ErrNotExist", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no OCI image layout") {
		t.Errorf("a directory without a layout: err = %v, want it to say it holds no OCI image layout", err)
	}
}

// A single image saved by its ID has no tag to check; a tagged one must
// match the tag given.
func TestSingleImageTag(t *testing.T) {
	img := baseImage(t)
	untagged := writeFile(t, writeDockerSave(t, img, nil, true))
	if im := mustOpen(t, untagged, WithTag("whatever:1")); len(im.RepoTags()) != 0 {
		t.Errorf("RepoTags() = %q, want none", im.RepoTags())
	}
	tagged := writeFile(t, writeDockerSave(t, img, []string{"app:1"}, true))
	if _, err := Open(tagged, WithTag("app:2")); err == nil || !strings.Contains(err.Error(), "no image tagged app:2; it holds app:1") {
		t.Errorf("a wrong tag: err = %v, want one naming the tag there is", err)
	}
	if im := mustOpen(t, tagged, WithTag("docker.io/library/app:1")); im.RepoTags()[0] != "app:1" {
		t.Errorf("RepoTags() = %q, want [app:1]", im.RepoTags())
	}
}
