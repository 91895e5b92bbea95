package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dimage "github.com/docker/docker/api/types/image"

	"github.com/ctrbench/ctrbench/internal/image"
)

// UserImage is a user's image made runnable by ctrbench's agent: Tag is
// the derived image (image.Derived) instances run, labelled as the
// campaign's; BaseID the user's image.
type UserImage struct {
	Tag    string
	BaseID string
	// Command is the image's own: ENTRYPOINT then CMD; WorkingDir its
	// WORKDIR.
	Command    []string
	WorkingDir string
}

// UserImageSource is where a user's image comes from: a reference in the
// engine, or an archive with what reading it found (its ID, the image's
// config digest, and the tags it carries).
type UserImageSource struct {
	Ref     string
	Archive string
	ID      string
	Tags    []string
}

// EnsureUserImage makes a user's image runnable: an archive is loaded
// (tags it adds that were not in the engine before are removed again, so
// only the labelled derived image stays and `clean --images` takes the
// rest with it; the user's own images are never touched), then the image
// that puts the agent binary into it is built unless it exists.
func (e *Engine) EnsureUserImage(ctx context.Context, src UserImageSource, binary string, labels map[string]string, progress io.Writer) (UserImage, error) {
	id := src.ID
	var added []string // tags a load added, removed once the derived image stands on it
	if src.Archive == "" {
		img, err := e.api.ImageInspect(ctx, src.Ref)
		if cerrdefs.IsNotFound(err) {
			return UserImage{}, fmt.Errorf("image %s is not in the engine: load it (docker load) or name its archive with image_archive", src.Ref)
		}
		if err != nil {
			return UserImage{}, fmt.Errorf("inspecting image %s: %w", src.Ref, err)
		}
		id = img.ID
	} else if _, err := e.api.ImageInspect(ctx, id); cerrdefs.IsNotFound(err) {
		if added, err = e.loadArchive(ctx, src, progress); err != nil {
			return UserImage{}, err
		}
	} else if err != nil {
		return UserImage{}, fmt.Errorf("inspecting image %s: %w", id, err)
	}
	plan, err := image.Derived(id, binary)
	if err != nil {
		return UserImage{}, err
	}
	base, err := e.api.ImageInspect(ctx, id)
	if err != nil {
		return UserImage{}, fmt.Errorf("inspecting image %s: %w", id, err)
	}
	u := UserImage{Tag: plan.Tag, BaseID: id}
	if base.Config != nil {
		u.Command = append(slices.Clone(base.Config.Entrypoint), base.Config.Cmd...)
		u.WorkingDir = base.Config.WorkingDir
	}
	if _, err := e.api.ImageInspect(ctx, plan.Tag); cerrdefs.IsNotFound(err) {
		start := time.Now()
		if err := buildImage(ctx, e.api, plan, labels); err != nil {
			return UserImage{}, fmt.Errorf("putting the agent into image %s: %w", src.Ref+src.Archive, err)
		}
		fmt.Fprintf(progress, "docker: built image %s from %s in %.1fs\n", plan.Tag, src.Ref+src.Archive, time.Since(start).Seconds())
	} else if err != nil {
		return UserImage{}, fmt.Errorf("inspecting image %s: %w", plan.Tag, err)
	}
	for _, t := range added {
		// The base stays, untagged, under the derived image; removing
		// that (clean --images) prunes it.
		if _, err := e.api.ImageRemove(ctx, t, dimage.RemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			return UserImage{}, fmt.Errorf("untagging %s after loading %s: %w", t, src.Archive, err)
		}
	}
	return u, nil
}

// loadArchive loads an archive whose image is not in the engine and says
// which of its tags the load added.
func (e *Engine) loadArchive(ctx context.Context, src UserImageSource, progress io.Writer) ([]string, error) {
	var added []string
	for _, t := range src.Tags {
		if _, err := e.api.ImageInspect(ctx, t); cerrdefs.IsNotFound(err) {
			added = append(added, t)
		}
	}
	f, err := os.Open(src.Archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := e.LoadImage(ctx, f); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Archive, err)
	}
	if _, err := e.api.ImageInspect(ctx, src.ID); err != nil {
		return nil, fmt.Errorf("%s: loaded, but image %s is not in the engine: %w", src.Archive, src.ID, err)
	}
	fmt.Fprintf(progress, "docker: loaded %s (%s)\n", src.Archive, shortID(strings.TrimPrefix(src.ID, "sha256:")))
	return added, nil
}
