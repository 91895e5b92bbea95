package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// bridgeNameOption names the Linux bridge Docker creates for a network.
const bridgeNameOption = "com.docker.network.bridge.name"

// bridgeNet is a campaign's own bridge network; the zero value is none.
type bridgeNet struct {
	name, id        string
	subnet, gateway string
	link            string // the host's bridge link, ctb<hash>
}

// createBridge makes the campaign's bridge network, or joins it when
// another platform of the campaign on the same engine made it already (the
// nested platform's parents share the docker platform's bridge). No subnet
// is chosen here: Docker assigns one from its address pools, which avoids
// clashing with networks this code cannot see.
func createBridge(ctx context.Context, api API, campaign string, labels map[string]string, progress io.Writer) (bridgeNet, error) {
	b := bridgeNet{name: NetworkName(campaign), link: BridgeName(campaign)}
	resp, err := api.NetworkCreate(ctx, b.name, network.CreateOptions{
		Driver:  "bridge",
		Labels:  labels,
		Options: map[string]string{bridgeNameOption: b.link},
	})
	verb := "created"
	switch {
	case cerrdefs.IsConflict(err):
		n, ierr := api.NetworkInspect(ctx, b.name, network.InspectOptions{})
		if ierr != nil || n.Labels[platform.LabelCampaign] != campaign {
			return bridgeNet{}, fmt.Errorf("creating network %s: %w", b.name, err)
		}
		resp.ID, verb = n.ID, "joined"
	case err != nil:
		return bridgeNet{}, fmt.Errorf("creating network %s: %w", b.name, err)
	}
	b.id = resp.ID
	n, err := api.NetworkInspect(ctx, resp.ID, network.InspectOptions{})
	if err != nil {
		return b, fmt.Errorf("inspecting network %s: %w", b.name, err)
	}
	if len(n.IPAM.Config) > 0 {
		b.subnet = n.IPAM.Config[0].Subnet
		b.gateway = n.IPAM.Config[0].Gateway
	}
	if b.gateway == "" {
		return b, fmt.Errorf("network %s has no IPv4 gateway", b.name)
	}
	fmt.Fprintf(progress, "docker: %s network %s (subnet %s, gateway %s, bridge %s)\n", verb, b.name, b.subnet, b.gateway, b.link)
	return b, nil
}

// remove deletes the network; one already gone is removed.
func (b bridgeNet) remove(ctx context.Context, api API) error {
	if b.id == "" {
		return nil
	}
	if err := api.NetworkRemove(ctx, b.id); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing network %s: %w", b.name, err)
	}
	return nil
}

// describe adds the network to a campaign's environment record.
func (b bridgeNet) describe(info map[string]string) {
	for k, v := range map[string]string{"docker.network": b.name, "docker.network_subnet": b.subnet, "docker.network_gateway": b.gateway, "docker.network_bridge": b.link} {
		if v != "" {
			info[k] = v
		}
	}
}

// defaultGateway reads the gateway of Docker's own default bridge
// (docker0), which ctrbench uses but never makes. Docker does not always
// list it in the network's IPAM configuration (20.10 omits it for the
// default bridge it found already configured); the bridge link's own
// address is the gateway then.
func defaultGateway(ctx context.Context, api API) (string, error) {
	n, err := api.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		return "", fmt.Errorf("reading Docker's default bridge network: %w", err)
	}
	if len(n.IPAM.Config) > 0 && n.IPAM.Config[0].Gateway != "" {
		return n.IPAM.Config[0].Gateway, nil
	}
	if link := n.Options[bridgeNameOption]; link != "" {
		if ip := linkIPv4(link); ip != "" {
			return ip, nil
		}
	}
	return "", errors.New("the default bridge network of Docker has no gateway (is the daemon running with --bridge=none?)")
}

// linkIPv4 is the first IPv4 address of a host link, "" if none.
func linkIPv4(name string) string {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return ""
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return ""
}
