package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"

	"github.com/ctrbench/ctrbench/internal/image"
)

// ensureImage plans the agent image and builds it unless an image with the
// same content tag is already present. Nothing is ever pulled.
func (p *Platform) ensureImage(ctx context.Context, tools []string, progress io.Writer) error {
	if p.binary == "" {
		return errors.New("docker platform: no ctrbench binary configured (WithBinary)")
	}
	plan, err := image.Plan(image.Input{Binary: p.binary, Tools: tools})
	if err != nil {
		return fmt.Errorf("planning agent image: %w", err)
	}
	p.missing = plan.Missing
	if len(plan.Missing) > 0 {
		fmt.Fprintf(progress, "docker: not installed on this host, so not in the image: %s (workloads that need them will fail)\n",
			strings.Join(plan.Missing, ", "))
	}
	if img, err := p.api.ImageInspect(ctx, plan.Tag); err == nil {
		p.imageTag, p.imageID, p.reused = plan.Tag, img.ID, true
		fmt.Fprintf(progress, "docker: reusing image %s\n", plan.Tag)
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspecting image %s: %w", plan.Tag, err)
	}

	var size int
	for _, f := range plan.Files {
		size += len(f.Data)
	}
	fmt.Fprintf(progress, "docker: building image %s (%d files, %.1f MiB)\n", plan.Tag, len(plan.Files), float64(size)/(1<<20))
	start := time.Now()
	if err := p.build(ctx, plan, progress); err != nil {
		return fmt.Errorf("building image %s: %w", plan.Tag, err)
	}
	img, err := p.api.ImageInspect(ctx, plan.Tag)
	if err != nil {
		return fmt.Errorf("inspecting built image %s: %w", plan.Tag, err)
	}
	p.imageTag, p.imageID, p.reused = plan.Tag, img.ID, false
	p.buildSecs = time.Since(start).Seconds()
	fmt.Fprintf(progress, "docker: built image %s in %.1fs\n", plan.Tag, p.buildSecs)
	return nil
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

func (p *Platform) build(ctx context.Context, plan *image.Context, progress io.Writer) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(plan.WriteTar(pw)) }()
	// Unblocks the tar writer whichever way the build ends.
	defer pr.Close()

	resp, err := p.api.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{plan.Tag},
		Labels:      p.labels,
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		NetworkMode: "none",
		// The classic builder needs no BuildKit session and handles
		// FROM scratch + COPY offline.
		Version: build.BuilderV1,
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
