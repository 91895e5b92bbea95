package outputs

import (
	"fmt"
	"sync"
)

// Capture keeps a command's output for Parse, up to a limit. Unlike the
// end that tailbuf keeps, Parse needs an output whole (a JSON object, a
// CSV header), so Capture keeps the first bytes and remembers that more
// came. It is safe for concurrent use.
type Capture struct {
	mu      sync.Mutex
	max     int
	b       []byte
	written int64
}

// NewCapture returns a capture keeping at most max bytes.
func NewCapture(max int) *Capture { return &Capture{max: max} }

// Write implements io.Writer; it never fails, so the command is never
// stopped by a full pipe.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written += int64(len(p))
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Bytes is the output kept, and an error when more was written than is
// kept: an output cut short cannot be read whole. The slice is the
// capture's own, not a copy.
func (c *Capture) Bytes() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written > int64(len(c.b)) {
		return c.b, fmt.Errorf("the command wrote %d bytes of output, more than the %d ctrbench keeps to read its metrics from; "+
			"write at most %d bytes (logs can go to standard error)", c.written, c.max, c.max)
	}
	return c.b, nil
}
