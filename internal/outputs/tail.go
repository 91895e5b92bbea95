package outputs

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The most of an output Tail quotes.
const (
	TailLines = 20
	TailBytes = 2 << 10
)

// Tail quotes the end of a command's output for a message: its last
// TailLines lines and at most TailBytes bytes, each line indented, after
// a heading that says how much of the output they are.
func Tail(out []byte) string {
	if len(bytes.TrimSpace(out)) == 0 {
		return fmt.Sprintf("the output was empty (%d bytes of white space)", len(out))
	}
	window := out[max(0, len(out)-TailBytes):]
	cut := len(window) < len(out)
	if cut {
		// Start at a character, not inside one.
		for i := 0; i < utf8.UTFMax && len(window) > 0 && !utf8.RuneStart(window[0]); i++ {
			window = window[1:]
		}
	}
	text := strings.ToValidUTF8(string(window), "\uFFFD")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n") // a progress line's updates, one per line
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	switch {
	case cut && len(lines) > 1:
		lines = lines[1:] // the cut went through it
	case cut:
		lines[0] = "…" + lines[0]
	}
	whole := !cut && len(lines) <= TailLines
	lines = lines[max(0, len(lines)-TailLines):]
	var b strings.Builder
	if whole {
		fmt.Fprintf(&b, "the whole output (%d lines):\n", len(lines))
	} else {
		fmt.Fprintf(&b, "the output's last %d lines, of %d bytes (a tail is at most %d lines and %d bytes):\n",
			len(lines), len(out), TailLines, TailBytes)
	}
	for _, l := range lines {
		b.WriteString("  | " + l + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
