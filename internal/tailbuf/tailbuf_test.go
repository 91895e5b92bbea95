package tailbuf

import (
	"strings"
	"testing"
)

func TestKeepsTheEnd(t *testing.T) {
	b := New(8)
	b.Write([]byte("hello "))
	b.Write([]byte("world, again"))
	if got := b.String(); got != "d, again" {
		t.Fatalf("got %q, want the last 8 bytes", got)
	}
	b = New(4)
	b.Write([]byte("abc"))
	b.Write([]byte("defgh"))
	b.Write([]byte("i"))
	if got := b.String(); got != "fghi" {
		t.Fatalf("got %q", got)
	}
	// A cut through a multi-byte character is dropped, not garbled.
	c := New(3)
	c.Write([]byte("aé" + "bc"))
	if got := c.String(); strings.ContainsRune(got, '\uFFFD') || got != "bc" {
		t.Fatalf("got %q", got)
	}
}
