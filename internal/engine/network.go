package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/subnets"
)

// bridgeNameOption names the Linux bridge Docker creates for a network.
const bridgeNameOption = "com.docker.network.bridge.name"

// Bridge is a campaign's own bridge network; the zero value is none.
type Bridge struct {
	Name, ID        string
	Subnet, Gateway string
	Link            string            // the host's bridge link, ctb<hash>
	Mode            string            // its gateway mode asked for ("" the engine's default, NAT)
	Options         map[string]string // the driver's options, as the engine reports them
}

// BridgeName is the host link name of a campaign's bridge network: the
// "ctb" prefix every ctrbench link carries plus 8 hex digits of a hash of
// the campaign ID (11 characters, under the kernel's 15).
func BridgeName(campaign string) string {
	sum := sha256.Sum256([]byte(campaign))
	return platform.LinkPrefix + hex.EncodeToString(sum[:])[:8]
}

// NetworkName is the Docker network of a campaign.
func NetworkName(campaign string) string { return "ctrbench-" + campaign }

// BridgeSpec is a campaign's bridge network to make.
type BridgeSpec struct {
	Campaign string
	Labels   map[string]string
	// Subnets are the subnets to try, in order: ctrbench's pool's blocks
	// for engine networks that no link of the machine uses. The first the
	// engine accepts is the network's (one another network of the engine
	// holds is refused by it, and the next is tried).
	Subnets []netip.Prefix
	// Options are the bridge driver's further options (its gateway mode).
	Options map[string]string
}

// CreateBridge makes the campaign's bridge network on the first of
// s.Subnets the engine accepts, or joins it when another platform of the
// campaign on the same engine made it already (the nested platform's
// parents share the docker platform's bridge). Its gateway is the
// subnet's first address.
func (e *Engine) CreateBridge(ctx context.Context, s BridgeSpec, progress io.Writer) (Bridge, error) {
	api := e.api
	b := Bridge{Name: NetworkName(s.Campaign), Link: BridgeName(s.Campaign)}
	if len(s.Subnets) == 0 {
		return Bridge{}, fmt.Errorf("creating network %s: no subnet of ctrbench's pool is free", b.Name)
	}
	opts := map[string]string{bridgeNameOption: b.Link}
	maps.Copy(opts, s.Options)
	b.Mode = opts[GatewayModeOption]
	var (
		resp network.CreateResponse
		err  error
	)
	for _, sub := range s.Subnets {
		resp, err = api.NetworkCreate(ctx, b.Name, network.CreateOptions{
			Driver:  "bridge",
			Labels:  s.Labels,
			Options: opts,
			IPAM:    &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: sub.String(), Gateway: subnets.Gateway(sub).String()}}},
		})
		if err == nil || !overlaps(err) {
			break
		}
	}
	verb := "created"
	switch {
	case cerrdefs.IsConflict(err) && !overlaps(err):
		n, ierr := api.NetworkInspect(ctx, b.Name, network.InspectOptions{})
		if ierr != nil || n.Labels[platform.LabelCampaign] != s.Campaign {
			return Bridge{}, fmt.Errorf("creating network %s: %w", b.Name, err)
		}
		resp.ID, verb = n.ID, "joined"
	case err != nil && overlaps(err):
		return Bridge{}, fmt.Errorf("creating network %s: every free subnet of ctrbench's pool (%s to %s) is another network's of the engine: %w (`ctrbench clean` removes killed runs' networks)", b.Name, s.Subnets[0], s.Subnets[len(s.Subnets)-1], err)
	case err != nil:
		return Bridge{}, fmt.Errorf("creating network %s: %w", b.Name, err)
	}
	b.ID = resp.ID
	n, err := api.NetworkInspect(ctx, resp.ID, network.InspectOptions{})
	if err != nil {
		return b, fmt.Errorf("inspecting network %s: %w", b.Name, err)
	}
	if len(n.IPAM.Config) > 0 {
		b.Subnet = n.IPAM.Config[0].Subnet
		b.Gateway = n.IPAM.Config[0].Gateway
	}
	if b.Gateway == "" {
		return b, fmt.Errorf("network %s has no IPv4 gateway", b.Name)
	}
	b.Options = n.Options
	fmt.Fprintf(progress, "docker: %s network %s (subnet %s, gateway %s, bridge %s)\n", verb, b.Name, b.Subnet, b.Gateway, b.Link)
	return b, nil
}

// overlaps reports whether the engine refused a network because another
// of its networks holds the subnet ("Pool overlaps with other one on this
// address space", Docker 20.10 to 28; podman: "subnet … is already used").
func overlaps(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "overlaps") || strings.Contains(m, "already used") || strings.Contains(m, "already in use")
}

// RemoveBridge deletes the network; one already gone is removed.
func (e *Engine) RemoveBridge(ctx context.Context, b Bridge) error {
	if b.ID == "" {
		return nil
	}
	if err := e.api.NetworkRemove(ctx, b.ID); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing network %s: %w", b.Name, err)
	}
	return nil
}

// Describe adds the network to a campaign's environment record.
func (b Bridge) Describe(info map[string]string) {
	prefix := "docker.network"
	if b.Mode != "" {
		prefix += "." + b.Mode
	}
	for k, v := range map[string]string{prefix: b.Name, prefix + "_subnet": b.Subnet, prefix + "_gateway": b.Gateway, prefix + "_bridge": b.Link} {
		if v != "" {
			info[k] = v
		}
	}
}

// DefaultGateway reads the gateway of Docker's own default bridge
// (docker0), which ctrbench uses but never makes. Docker does not always
// list it in the network's IPAM configuration (20.10 omits it for the
// default bridge it found already configured); the bridge link's own
// address is the gateway then.
func (e *Engine) DefaultGateway(ctx context.Context) (string, error) {
	n, err := e.api.NetworkInspect(ctx, "bridge", network.InspectOptions{})
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

// DefaultSubnet is the subnet of Docker's own default bridge (docker0):
// the user's engine's range, which ctrbench uses (network bridge-default)
// but never configures.
func DefaultSubnet(ctx context.Context, opts ...Option) (netip.Prefix, error) {
	e, err := New(opts...)
	if err != nil {
		return netip.Prefix{}, err
	}
	defer e.Close()
	n, err := e.api.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("reading Docker's default bridge network: %w", err)
	}
	for _, c := range n.IPAM.Config {
		if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is4() {
			return p.Masked(), nil
		}
	}
	if link := n.Options[bridgeNameOption]; link != "" {
		if ifc, err := net.InterfaceByName(link); err == nil {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
					return p.Masked(), nil
				}
			}
		}
	}
	return netip.Prefix{}, errors.New("the default bridge network of Docker has no IPv4 subnet")
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

// CreateVolume creates a local volume.
func (e *Engine) CreateVolume(ctx context.Context, name string, labels map[string]string) error {
	_, err := e.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels})
	return err
}

// RemoveVolume removes a volume, with force even one in use; one already
// gone is removed.
func (e *Engine) RemoveVolume(ctx context.Context, name string, force bool) error {
	if err := e.api.VolumeRemove(ctx, name, force); err != nil && !cerrdefs.IsNotFound(err) {
		return err
	}
	return nil
}
