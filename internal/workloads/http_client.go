package workloads

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// h1conn is one persistent HTTP/1.1 connection that sends the same GET again
// and again and reads Content-Length responses into a reused buffer: the
// design of wrk. net/http's client allocates per request and, on a 2-core
// machine where the load generator shares CPUs with the servers it loads,
// measured only half of wrk's rate against the same pong.
type h1conn struct {
	addr    string
	req     []byte
	timeout time.Duration
	c       net.Conn
	r       *bufio.Reader
	body    []byte
}

func newH1Conn(addr, path string, timeout time.Duration) *h1conn {
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: ctrbench\r\n\r\n"
	return &h1conn{addr: addr, req: []byte(req), timeout: timeout}
}

var errChunked = errors.New("response without Content-Length (chunked or streamed) is not supported")

// get sends the request and returns the status and the body, which is valid
// until the next call. On any error the connection is closed and the next
// call dials again.
func (h *h1conn) get() (int, []byte, error) {
	if h.c == nil {
		c, err := net.DialTimeout("tcp", h.addr, h.timeout)
		if err != nil {
			return 0, nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		h.c, h.r = c, bufio.NewReaderSize(c, 64<<10)
	}
	status, body, keep, err := h.roundTrip()
	if err != nil || !keep {
		h.close()
	}
	return status, body, err
}

func (h *h1conn) roundTrip() (status int, body []byte, keep bool, err error) {
	if err := h.c.SetDeadline(time.Now().Add(h.timeout)); err != nil {
		return 0, nil, false, err
	}
	if _, err := h.c.Write(h.req); err != nil {
		return 0, nil, false, err
	}
	line, err := h.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, fmt.Errorf("reading status line: %w", err)
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, fmt.Errorf("malformed status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, fmt.Errorf("malformed status line %q", line)
	}
	length, keep := -1, true
	for {
		line, err := h.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, fmt.Errorf("reading headers: %w", err)
		}
		if len(line) <= 2 { // the blank line ending the headers
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "connection") && asciiEqualFold(value, "close"):
			keep = false
		case asciiEqualFold(name, "transfer-encoding"):
			return 0, nil, false, errChunked
		}
	}
	if length < 0 {
		return 0, nil, false, errChunked
	}
	if cap(h.body) < length {
		h.body = make([]byte, length)
	}
	body = h.body[:length]
	if _, err := io.ReadFull(h.r, body); err != nil {
		return 0, nil, false, fmt.Errorf("reading %d-byte body: %w", length, err)
	}
	return status, body, keep, nil
}

func (h *h1conn) close() {
	if h.c != nil {
		h.c.Close()
		h.c, h.r = nil, nil
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
