package wireguard

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
)

// goneTimeout bounds how long Run waits for the kernel to remove the TUN
// after closing it.
const goneTimeout = 5 * time.Second

// Run creates the TUN device c.Interface in the calling process's network
// namespace, starts wireguard-go on it, puts c.Address on it, sets the MTU
// and brings it up, then calls ready (if not nil) and blocks until ctx ends.
// It then closes the device, waits for the TUN to disappear and returns nil.
// wireguard-go's error messages go to log (nil: discarded).
//
// Run never switches namespaces: start the process inside the namespace so
// every thread, including those wireguard-go starts, is in it.
func Run(ctx context.Context, c Config, log io.Writer, ready func()) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	uapi, err := c.uapi()
	if err != nil {
		return err
	}
	addr, _ := netip.ParsePrefix(c.Address) // checked by Validate
	mtu := c.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}

	tdev, err := tun.CreateTUN(c.Interface, mtu)
	if err != nil {
		return fmt.Errorf("creating TUN %s: %w", c.Interface, err)
	}
	// The device owns tdev from here: closing it closes the TUN, which the
	// kernel then removes.
	dev := device.NewDevice(tdev, conn.NewDefaultBind(), logger(log, c.Interface))
	stop := func() error {
		dev.Close()
		return waitGone(c.Interface, goneTimeout)
	}
	fail := func(err error) error {
		if serr := stop(); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}

	if err := dev.IpcSet(uapi); err != nil {
		return fail(fmt.Errorf("configuring wireguard-go on %s: %w", c.Interface, err))
	}
	if err := dev.Up(); err != nil {
		return fail(fmt.Errorf("starting wireguard-go on %s: %w", c.Interface, err))
	}
	if err := configureLink(c.Interface, addr, mtu); err != nil {
		return fail(err)
	}
	if ready != nil {
		ready()
	}

	select {
	case <-ctx.Done():
		return stop()
	case <-dev.Wait():
		// wireguard-go closes the device itself when the TUN fails, for
		// instance when someone deletes the link.
		return fail(fmt.Errorf("wireguard-go closed %s before the context ended", c.Interface))
	}
}

// uapi renders c in wireguard-go's configuration protocol (keys in hex),
// replacing any previous peers.
func (c Config) uapi() (string, error) {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	hexKey := func(s string) (string, error) {
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(k), nil
	}
	sk, err := hexKey(c.PrivateKey)
	if err != nil {
		return "", fmt.Errorf("private key: %w", err)
	}
	line("private_key", sk)
	line("listen_port", strconv.Itoa(c.ListenPort))
	line("replace_peers", "true")
	for i, p := range c.Peers {
		pk, err := hexKey(p.PublicKey)
		if err != nil {
			return "", fmt.Errorf("peer %d: public key: %w", i, err)
		}
		line("public_key", pk)
		if p.Endpoint != "" {
			ap, err := netip.ParseAddrPort(p.Endpoint)
			if err != nil {
				return "", fmt.Errorf("peer %d: endpoint: %w", i, err)
			}
			line("endpoint", ap.String())
		}
		if p.PersistentKeepalive > 0 {
			line("persistent_keepalive_interval", strconv.Itoa(p.PersistentKeepalive))
		}
		line("replace_allowed_ips", "true")
		for _, s := range p.AllowedIPs {
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				return "", fmt.Errorf("peer %d: allowed IP: %w", i, err)
			}
			line("allowed_ip", pfx.Masked().String())
		}
	}
	return b.String(), nil
}

// logger passes wireguard-go's errors to w and drops its verbose messages.
func logger(w io.Writer, name string) *device.Logger {
	l := &device.Logger{Verbosef: device.DiscardLogf, Errorf: device.DiscardLogf}
	if w != nil {
		// log.Logger serialises writes, as device.Logger requires.
		l.Errorf = log.New(w, "wireguard-go "+name+": ", log.LstdFlags).Printf
	}
	return l
}
