package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockerbuild "github.com/docker/docker/api/types/build"

	"github.com/ctrbench/ctrbench/internal/image"
)

// agentImage is the campaign's agent image; the zero value is none yet.
type agentImage struct {
	tag, id   string
	reused    bool     // the image existed already
	missing   []string // tools not on this host, so not in the image
	buildSecs float64
}

// describe adds the image to a campaign's environment record.
func (a agentImage) describe(info map[string]string) {
	if a.tag == "" {
		return
	}
	info["docker.image"], info["docker.image_id"] = a.tag, a.id
	info["docker.image_reused"] = strconv.FormatBool(a.reused)
	if !a.reused {
		info["docker.image_build_seconds"] = strconv.FormatFloat(a.buildSecs, 'f', 2, 64)
	}
	if len(a.missing) > 0 {
		info["docker.image_missing_tools"] = fmt.Sprint(a.missing)
	}
}

// ensureImage plans the agent image and builds it unless an image with the
// same content tag is already present. Nothing is ever pulled.
func ensureImage(ctx context.Context, api API, binary string, tools []string, labels map[string]string, progress io.Writer) (agentImage, error) {
	if binary == "" {
		return agentImage{}, errors.New("docker platform: no ctrbench binary configured (WithBinary)")
	}
	plan, err := image.Plan(image.Input{Binary: binary, Tools: tools})
	if err != nil {
		return agentImage{}, fmt.Errorf("planning agent image: %w", err)
	}
	a := agentImage{tag: plan.Tag, missing: plan.Missing}
	if len(plan.Missing) > 0 {
		fmt.Fprintf(progress, "docker: not installed on this host, so not in the image: %s (workloads that need them will fail)\n",
			strings.Join(plan.Missing, ", "))
	}
	if img, err := api.ImageInspect(ctx, plan.Tag); err == nil {
		a.id, a.reused = img.ID, true
		fmt.Fprintf(progress, "docker: reusing image %s\n", plan.Tag)
		return a, nil
	} else if !cerrdefs.IsNotFound(err) {
		return agentImage{}, fmt.Errorf("inspecting image %s: %w", plan.Tag, err)
	}

	var size int
	for _, f := range plan.Files {
		size += len(f.Data)
	}
	fmt.Fprintf(progress, "docker: building image %s (%d files, %.1f MiB)\n", plan.Tag, len(plan.Files), float64(size)/(1<<20))
	start := time.Now()
	if err := buildImage(ctx, api, plan, labels); err != nil {
		return agentImage{}, fmt.Errorf("building image %s: %w", plan.Tag, err)
	}
	img, err := api.ImageInspect(ctx, plan.Tag)
	if err != nil {
		return agentImage{}, fmt.Errorf("inspecting built image %s: %w", plan.Tag, err)
	}
	a.id, a.buildSecs = img.ID, time.Since(start).Seconds()
	fmt.Fprintf(progress, "docker: built image %s in %.1fs\n", plan.Tag, a.buildSecs)
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

	resp, err := api.ImageBuild(ctx, pr, dockerbuild.ImageBuildOptions{
		Tags:        []string{plan.Tag},
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
