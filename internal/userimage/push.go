package userimage

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Registry is where images are pushed for a cluster whose nodes pull
// them: a registry's host (and port) and a repository prefix, reached over
// HTTPS, or plain HTTP when it was given as http://.
type Registry struct {
	Host, Prefix string
	Insecure     bool
}

// ParseRegistry reads HOST[:PORT][/PREFIX], with http:// for a registry
// without TLS (https:// or no scheme: TLS).
func ParseRegistry(s string) (Registry, error) {
	var r Registry
	rest := s
	switch {
	case strings.HasPrefix(rest, "http://"):
		r.Insecure, rest = true, strings.TrimPrefix(rest, "http://")
	case strings.HasPrefix(rest, "https://"):
		rest = strings.TrimPrefix(rest, "https://")
	}
	r.Host, r.Prefix, _ = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if r.Host == "" {
		return r, fmt.Errorf("registry %q: want HOST[:PORT][/PREFIX], e.g. registry.example:5000/bench (http://… for one without TLS)", s)
	}
	if _, err := name.NewRegistry(r.Host, r.options()...); err != nil {
		return r, fmt.Errorf("registry %q: %w", s, err)
	}
	if r.Prefix != "" {
		if _, err := name.NewRepository(r.Host+"/"+r.Prefix+"/x", r.options()...); err != nil {
			return r, fmt.Errorf("registry %q: its prefix %q is not a repository path: %w", s, r.Prefix, err)
		}
	}
	return r, nil
}

func (r Registry) options() []name.Option {
	if r.Insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

func (r Registry) String() string {
	s := r.Host
	if r.Prefix != "" {
		s += "/" + r.Prefix
	}
	if r.Insecure {
		s = "http://" + s
	}
	return s
}

// Push pushes the image of the `docker save` archive at path (one image)
// to the registry, as repo:tag under its prefix, with the credentials
// Docker's CLI keeps (~/.docker/config.json), and returns the reference
// by digest that pods pull: "HOST/PREFIX/repo@sha256:…".
func (r Registry) Push(ctx context.Context, path, repo, tag string) (string, error) {
	full := r.Host + "/" + strings.TrimPrefix(r.Prefix+"/"+repo, "/")
	ref, err := name.NewTag(full+":"+tag, r.options()...)
	if err != nil {
		return "", fmt.Errorf("image reference %s:%s: %w", full, tag, err)
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return ref.Context().Digest(d.String()).String(), nil
}
