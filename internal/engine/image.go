package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockerbuild "github.com/docker/docker/api/types/build"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/owner"
)

// AgentImage is a campaign's agent image; the zero value is none yet.
type AgentImage struct {
	Tag, ID   string
	Reused    bool     // the image existed already
	Missing   []string // tools not on this host, so not in the image
	BuildSecs float64
}

// Describe adds the image to a campaign's environment record.
func (a AgentImage) Describe(info map[string]string) {
	if a.Tag == "" {
		return
	}
	info["docker.image"], info["docker.image_id"] = a.Tag, a.ID
	info["docker.image_reused"] = strconv.FormatBool(a.Reused)
	if !a.Reused {
		info["docker.image_build_seconds"] = strconv.FormatFloat(a.BuildSecs, 'f', 2, 64)
	}
	if len(a.Missing) > 0 {
		info["docker.image_missing_tools"] = fmt.Sprint(a.Missing)
	}
}

// EnsureAgentImage plans the agent image of binary with tools and builds
// it unless an image with the same content tag is already present (the
// build context goes over the API). Nothing is ever pulled.
func (e *Engine) EnsureAgentImage(ctx context.Context, binary string, tools []string, labels map[string]string, progress io.Writer) (AgentImage, error) {
	api := e.api
	if binary == "" {
		return AgentImage{}, errors.New("docker platform: no ctrbench binary configured (WithBinary)")
	}
	plan, err := image.Plan(image.Input{Binary: binary, Tools: tools})
	if err != nil {
		return AgentImage{}, fmt.Errorf("planning agent image: %w", err)
	}
	a := AgentImage{Tag: plan.Tag, Missing: plan.Missing}
	if len(plan.Missing) > 0 {
		fmt.Fprintf(progress, "docker: not installed on this host, so not in the image: %s (workloads that need them will fail)\n",
			strings.Join(plan.Missing, ", "))
	}
	if img, err := api.ImageInspect(ctx, plan.Tag); err == nil {
		a.ID, a.Reused = img.ID, true
		fmt.Fprintf(progress, "docker: reusing image %s\n", plan.Tag)
		return a, nil
	} else if !cerrdefs.IsNotFound(err) {
		return AgentImage{}, fmt.Errorf("inspecting image %s: %w", plan.Tag, err)
	}

	var size int
	for _, f := range plan.Files {
		size += len(f.Data)
	}
	fmt.Fprintf(progress, "docker: building image %s (%d files, %.1f MiB)\n", plan.Tag, len(plan.Files), float64(size)/(1<<20))
	start := time.Now()
	if err := buildImage(ctx, api, plan, labels); err != nil {
		return AgentImage{}, fmt.Errorf("building image %s: %w", plan.Tag, err)
	}
	img, err := api.ImageInspect(ctx, plan.Tag)
	if err != nil {
		return AgentImage{}, fmt.Errorf("inspecting built image %s: %w", plan.Tag, err)
	}
	a.ID, a.BuildSecs = img.ID, time.Since(start).Seconds()
	fmt.Fprintf(progress, "docker: built image %s in %.1fs\n", plan.Tag, a.BuildSecs)
	return a, nil
}

// buildMessage is one line of the daemon's JSON build output.
type buildMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

func buildImage(ctx context.Context, api API, plan *image.Context, labels map[string]string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(plan.WriteTar(pw)) }()
	// Unblocks the tar writer whichever way the build ends.
	defer pr.Close()
	return buildFrom(ctx, api, plan.Tag, pr, labels)
}

// BuildFrom builds image tag from a build context an image plan wrote
// (image.Context.WriteTar) elsewhere: a virtual machine's engine builds
// the agent image from the context its host wrote to a disk.
func (e *Engine) BuildFrom(ctx context.Context, tag string, buildContext io.Reader, labels map[string]string) error {
	if err := buildFrom(ctx, e.api, tag, buildContext, labels); err != nil {
		return fmt.Errorf("building image %s: %w", tag, err)
	}
	return nil
}

func buildFrom(ctx context.Context, api API, tag string, buildContext io.Reader, labels map[string]string) error {
	resp, err := api.ImageBuild(ctx, buildContext, dockerbuild.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		NetworkMode: "none",
		// The classic builder needs no BuildKit session and handles
		// FROM scratch + COPY offline.
		Version: dockerbuild.BuilderV1,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The builder's step-by-step log is kept for a failure report only; a
	// successful build is one line of progress, written by the caller.
	var log strings.Builder
	fail := func(msg string) error {
		return fmt.Errorf("%s\nbuild log:\n%s", strings.TrimSpace(msg), log.String())
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var m buildMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading build output: %w", err)
		}
		if m.Error != "" {
			return fail(m.Error)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return fail(m.ErrorDetail.Message)
		}
		if m.Stream != "" {
			log.WriteString(m.Stream)
		} else if m.Status != "" {
			log.WriteString(m.Status + "\n")
		}
	}
}

// EnsureImage builds the image in (content-addressed, FROM scratch) unless
// an image of that tag is there already, and returns its tag. Nothing is
// pulled.
func (e *Engine) EnsureImage(ctx context.Context, in image.Input, labels map[string]string, progress io.Writer) (string, error) {
	plan, err := image.Plan(in)
	if err != nil {
		return "", fmt.Errorf("planning image: %w", err)
	}
	if len(plan.Missing) > 0 {
		return "", fmt.Errorf("image %s: not installed on this host: %s", plan.Tag, strings.Join(plan.Missing, ", "))
	}
	if _, err := e.api.ImageInspect(ctx, plan.Tag); err == nil {
		return plan.Tag, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspecting image %s: %w", plan.Tag, err)
	}
	start := time.Now()
	if err := buildImage(ctx, e.api, plan, owner.Labels("", labels)); err != nil {
		return "", fmt.Errorf("building image %s: %w", plan.Tag, err)
	}
	fmt.Fprintf(progress, "docker: built image %s in %.1fs\n", plan.Tag, time.Since(start).Seconds())
	return plan.Tag, nil
}

// ImageID is the ID ("sha256:…") of an image in the engine.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := e.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", err
	}
	return img.ID, nil
}

// SaveImage writes the image tag as `docker save` does.
func (e *Engine) SaveImage(ctx context.Context, tag string, w io.Writer) error {
	rc, err := e.api.ImageSave(ctx, []string{tag})
	if err != nil {
		return fmt.Errorf("saving image %s: %w", tag, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("saving image %s: %w", tag, err)
	}
	return nil
}

// LoadImage loads a saved image into the engine, as `docker load` does,
// and returns the names the engine gave what it loaded. They are not
// always the archive's tags: an archive of Docker 25 or later is an OCI
// layout too, and podman 4.3 loads it by the layout's
// io.containerd.image.name annotation ("docker.io/library/NAME:TAG"),
// where it names a `docker save` archive of Docker 20.10
// "localhost/NAME:TAG".
func (e *Engine) LoadImage(ctx context.Context, r io.Reader) ([]string, error) {
	resp, err := e.api.ImageLoad(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("loading image: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("loading image: %w", err)
	}
	if strings.Contains(string(out), `"error"`) {
		return nil, fmt.Errorf("loading image: %s", strings.TrimSpace(string(out)))
	}
	return loadedNames(out), nil
}

// loadedNames reads the names an image load reports ("Loaded image:
// NAME" in its JSON stream's messages).
func loadedNames(out []byte) []string {
	var names []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Stream string }
		if dec.Decode(&m) != nil {
			break
		}
		for _, line := range strings.Split(m.Stream, "\n") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "Loaded image: "); ok {
				names = append(names, strings.TrimSpace(name))
			}
		}
	}
	return names
}

// LoadedAs is the name among loaded that is image tag (NAME:TAG), as an
// engine named it: the tag itself, or the tag under a registry
// ("localhost/NAME:TAG", "docker.io/library/NAME:TAG"); "" if none is.
func LoadedAs(loaded []string, tag string) string {
	for _, n := range loaded {
		if n == tag || strings.HasSuffix(n, "/"+tag) {
			return n
		}
	}
	return ""
}

// SaveImageTemp writes ref, an image in the engine the environment names,
// as a `docker save` archive into a temporary file, for a platform that
// unpacks images (host processes, LXC); the caller removes the file.
func SaveImageTemp(ctx context.Context, ref string) (string, error) {
	e, err := New()
	if err != nil {
		return "", err
	}
	defer e.Close()
	f, err := os.CreateTemp("", "ctrbench-save-*.tar")
	if err != nil {
		return "", err
	}
	err = e.SaveImage(ctx, ref, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
