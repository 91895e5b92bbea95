package outputs

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestTail(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	cases := []struct {
		name string
		out  string
		want string
	}{
		{"empty", "", "the output was empty (0 bytes of white space)"},
		{"blank", "\n \n", "the output was empty (3 bytes of white space)"},
		{"short", "a\nb\n", "the whole output (2 lines):\n  | a\n  | b"},
		{"no final newline", "a\r\nb", "the whole output (2 lines):\n  | a\n  | b"},
		{"progress", "SET: 1000\rSET: 2000\rSET: done\n", "the whole output (3 lines):\n  | SET: 1000\n  | SET: 2000\n  | SET: done"},
		{"many lines", many.String(), "the output's last 20 lines, of 231 bytes (a tail is at most 20 lines and 2048 bytes):\n  | line 11\n"},
		{"one long line", strings.Repeat("x", 3000) + "\n", "the output's last 1 lines, of 3001 bytes (a tail is at most 20 lines and 2048 bytes):\n  | …xxx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tail([]byte(tc.out)); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got\n%s\nwant it to start with\n%s", got, tc.want)
			}
		})
	}
}

// A tail cut through a long line drops that line's start, and a cut
// through a character drops the character, not the text.
func TestTailCuts(t *testing.T) {
	out := []byte("first\n" + strings.Repeat("é", 1500) + "\nlast line\n")
	got := Tail(out)
	if strings.Contains(got, "first") || !strings.HasSuffix(got, "  | last line") || !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
		t.Fatalf("got %q", got)
	}
	if n := len(got) - len("the output's last 1 lines, of 3017 bytes (a tail is at most 20 lines and 2048 bytes):\n  | "); n > TailBytes {
		t.Fatalf("%d bytes quoted, more than %d", n, TailBytes)
	}
}

func TestCapture(t *testing.T) {
	c := NewCapture(10)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := c.Write([]byte("ab")); n != 2 || err != nil {
				t.Errorf("Write: %d, %v", n, err)
			}
		}()
	}
	wg.Wait()
	if b, err := c.Bytes(); err != nil || !bytes.Equal(b, []byte("abababab")) {
		t.Fatalf("got %q, %v: the output fits", b, err)
	}
	if n, err := c.Write([]byte("cdef")); n != 4 || err != nil {
		t.Fatalf("Write over the limit: %d, %v; it never fails", n, err)
	}
	b, err := c.Bytes()
	if string(b) != "ababababcd" || err == nil {
		t.Fatalf("got %q, %v", b, err)
	}
	if want := "the command wrote 12 bytes of output, more than the 10 ctrbench keeps"; !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "write at most 10 bytes") {
		t.Fatalf("%q lacks %q or what is allowed", err, want)
	}
}
