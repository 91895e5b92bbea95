package kubernetes

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/userimage"
)

// ContainerdAnnotation is the node annotation that says where the node's
// containerd listens on this machine (a socket path): a cluster whose
// nodes run here (scripts/k8s.sh's) sets it, and ctrbench imports images
// into the node there, as kind load does, instead of a registry.
const ContainerdAnnotation = "ctrbench.io/containerd"

// criNamespace is the containerd namespace the kubelet's CRI uses.
const criNamespace = "k8s.io"

// bringAgent makes the agent image — ctrbench and the workloads' tools,
// FROM scratch, written by ctrbench itself — and imports it into every
// node that says where its containerd is; a node that does not must have
// it already (its pods fail saying how to load it). It returns the
// image's reference as pods name it.
func bringAgent(ctx context.Context, c *kube.Client, reg *userimage.Registry, binary string, tools []string, nodes []kube.Node, notes io.Writer) (string, error) {
	plan, err := image.Plan(image.Input{Binary: binary, Tools: tools})
	if err != nil {
		return "", fmt.Errorf("kubernetes: the agent image: %w", err)
	}
	if len(plan.Missing) > 0 {
		fmt.Fprintf(notes, "kubernetes: not installed on this host, so not in the image: %s (workloads that need them will fail)\n", strings.Join(plan.Missing, ", "))
	}
	return bringImage(ctx, c, reg, nodes, "docker.io/library/"+plan.Tag, "the agent image", plan.WriteArchive, notes)
}

// userImage is a user's image as its pods run it: the image with the
// agent put into it, and what the image itself would run.
type userImage struct {
	ref     string
	workdir string
	command []string
}

// bringUser puts the agent into a user's image (package userimage, from
// its archive or the one the orchestrator saves from the machine's engine)
// and imports the result into every node, as bringAgent does.
func bringUser(ctx context.Context, c *kube.Client, reg *userimage.Registry, binary string, img platform.Image, save platform.SaveImage, nodes []kube.Node, notes io.Writer) (userImage, error) {
	im, err := userimage.OpenSource(ctx, img.Ref, img.Archive, save)
	if err != nil {
		return userImage{}, fmt.Errorf("kubernetes: %w", err)
	}
	defer im.Close()
	ref, err := im.AgentRef(binary)
	if err != nil {
		return userImage{}, fmt.Errorf("kubernetes: %w", err)
	}
	cfg := im.Config()
	u := userImage{workdir: cfg.WorkingDir, command: append(slices.Clone(cfg.Entrypoint), cfg.Cmd...)}
	write := func(w io.Writer) error { return im.WriteWithAgent(w, ref, binary, image.BinaryPath) }
	u.ref, err = bringImage(ctx, c, reg, nodes, ref, "image "+img.String(), write, notes)
	return u, err
}

// bringImage brings the image ref, which write writes as an archive (once,
// and only when a node lacks it), to the nodes and returns the reference
// pods run it by. With a registry (--registry) it is pushed there and pods
// pull it by digest; without, it is imported into the containerd of every
// node that says where its containerd is, and a node that does not must
// have it already.
func bringImage(ctx context.Context, c *kube.Client, reg *userimage.Registry, nodes []kube.Node, ref, what string, write func(io.Writer) error, notes io.Writer) (string, error) {
	var archive string
	defer func() {
		if archive != "" {
			os.Remove(archive)
		}
	}()
	if reg != nil {
		var err error
		if archive, err = writeArchive(write, what); err != nil {
			return "", err
		}
		repo, tag, _ := strings.Cut(strings.TrimPrefix(ref, "docker.io/library/"), ":")
		pushed, err := reg.Push(ctx, archive, repo, tag)
		if err != nil {
			return "", fmt.Errorf("kubernetes: %s to the registry %s: %w", what, reg, err)
		}
		fmt.Fprintf(notes, "kubernetes: pushed %s (%s) as %s\n", ref, what, pushed)
		return pushed, nil
	}
	for _, n := range nodes {
		sock, err := containerdOf(ctx, c, n.Name)
		if err != nil {
			return "", err
		}
		if sock == "" {
			fmt.Fprintf(notes, "kubernetes: node %s does not say where its containerd is (annotation %s): %s (%s) must be on it already, or give --registry\n", n.Name, ContainerdAnnotation, ref, what)
			continue
		}
		if has, err := ctr(ctx, sock, "images", "ls", "-q", "name=="+ref); err == nil && strings.TrimSpace(has) == ref {
			continue
		}
		if archive == "" {
			if archive, err = writeArchive(write, what); err != nil {
				return "", err
			}
		}
		if out, err := ctr(ctx, sock, "images", "import", archive); err != nil {
			return "", fmt.Errorf("kubernetes: importing %s (%s) into node %s's containerd (%s): %v: %s", ref, what, n.Name, sock, err, strings.TrimSpace(out))
		}
		fmt.Fprintf(notes, "kubernetes: imported %s (%s) into node %s\n", ref, what, n.Name)
	}
	return ref, nil
}

// containerdOf is where node name's containerd listens on this machine,
// from its annotation; "" when it does not say or it is not here.
func containerdOf(ctx context.Context, c *kube.Client, name string) (string, error) {
	anns, err := c.NodeAnnotations(ctx, name)
	if err != nil {
		return "", fmt.Errorf("kubernetes: %w", err)
	}
	sock := anns[ContainerdAnnotation]
	if sock == "" {
		return "", nil
	}
	if st, err := os.Stat(sock); err != nil || st.Mode()&os.ModeSocket == 0 {
		return "", nil
	}
	return sock, nil
}

// writeArchive writes an image archive, with write, to a temporary file.
func writeArchive(write func(io.Writer) error, what string) (string, error) {
	f, err := os.CreateTemp("", "ctrbench-image-*.tar")
	if err != nil {
		return "", err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("kubernetes: writing %s: %w", what, err)
	}
	return f.Name(), nil
}

// ctr runs containerd's own client, the reference tool for what a node's
// containerd holds, against the socket sock in the kubelet's namespace.
func ctr(ctx context.Context, sock string, args ...string) (string, error) {
	if _, err := exec.LookPath("ctr"); err != nil {
		return "", fmt.Errorf("ctr (containerd's client) is not installed: it imports images into the nodes")
	}
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", criNamespace}, args...)...).CombinedOutput()
	return string(out), err
}
