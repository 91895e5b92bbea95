// Package tailbuf keeps the last bytes written to it: an instance's
// standard error, whose end says why it failed.
package tailbuf

import (
	"strings"
	"sync"
)

// Buffer keeps the last Max bytes written; safe for concurrent use.
type Buffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// New returns a buffer keeping the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write implements io.Writer; it never fails.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String is what was kept, as valid UTF-8 (a cut may split a character).
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.b), "")
}
