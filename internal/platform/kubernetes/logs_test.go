package kubernetes

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// brokenStream delivers its text, then fails as a log stream whose
// kubelet was killed does.
type brokenStream struct{ r io.Reader }

func (b *brokenStream) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errors.New("unexpected EOF")
	}
	return n, err
}
func (b *brokenStream) Close() error { return nil }

// TestMendedLog: a log stream cut short (its kubelet killed) is completed
// from the whole log once the agent has ended, without a byte twice; a
// stream that carried everything gets nothing more; a log that cannot be
// read ends the output where the stream did.
func TestMendedLog(t *testing.T) {
	const all = "line 1\nline 2\n{\"event\":\"result\"}\n"
	exited := make(chan struct{})
	close(exited)
	for name, c := range map[string]struct {
		streamed string
		rest     func(context.Context) (string, error)
		want     string
	}{
		"cut short":      {all[:9], func(context.Context) (string, error) { return all, nil }, all},
		"whole":          {all, func(context.Context) (string, error) { return all, nil }, all},
		"log unreadable": {all[:9], func(context.Context) (string, error) { return "", errors.New("pod gone") }, all[:9]},
	} {
		m := newMended(context.Background(), &brokenStream{strings.NewReader(c.streamed)}, exited, c.rest)
		got, err := io.ReadAll(m)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: read %q, %v; want %q", name, got, err, c.want)
		}
	}
}
