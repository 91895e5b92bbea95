package agent

import (
	"context"
	"testing"
)

// An echo request's checksum makes the one's-complement sum of the whole
// message all ones, as a receiver checks it.
func TestEchoChecksum(t *testing.T) {
	for _, seq := range []uint16{1, 2, 0xffff} {
		b := echo(0x1234, seq)
		var sum uint32
		for i := 0; i < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		for sum > 0xffff {
			sum = sum>>16 + sum&0xffff
		}
		if sum != 0xffff || b[0] != 8 {
			t.Errorf("seq %d: sum %#x, type %d", seq, sum, b[0])
		}
	}
}

// A target on loopback, or not an address, is not waited for.
func TestWaitForRouteSkips(t *testing.T) {
	for _, target := range []string{"127.0.0.1:80", "server:80", "nonsense"} {
		if err := waitForRoute(context.Background(), target); err != nil {
			t.Errorf("%s: %v", target, err)
		}
	}
}
