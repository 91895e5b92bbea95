package kubernetes

import (
	"context"
	"io"
	"strings"
	"sync"
)

// mended is a pod's log as the agent's standard output: the followed
// stream, and, once the stream has ended and the agent has too, whatever
// of the whole log the stream did not carry — its kubelet serves the
// stream, and a kubelet killed or restarted mid-trial (or a containerd)
// ends it early, while the container's log file keeps every line the agent
// wrote, its result among them.
type mended struct {
	stream io.ReadCloser
	// rest reads the whole log; called once, after exited is closed.
	rest   func(context.Context) (string, error)
	exited <-chan struct{}
	ctx    context.Context

	read int64 // bytes the stream delivered
	tail *strings.Reader
	once sync.Once
}

func newMended(ctx context.Context, stream io.ReadCloser, exited <-chan struct{}, rest func(context.Context) (string, error)) *mended {
	return &mended{stream: stream, rest: rest, exited: exited, ctx: ctx}
}

func (m *mended) Read(p []byte) (int, error) {
	if m.tail == nil {
		n, err := m.stream.Read(p)
		m.read += int64(n)
		if err == nil {
			return n, nil
		}
		m.once.Do(m.mend)
		if n > 0 {
			return n, nil
		}
	}
	return m.tail.Read(p)
}

// mend waits for the agent's end and keeps what of its log the stream
// missed (nothing when it carried it all, or when the log cannot be read:
// the pod gone).
func (m *mended) mend() {
	m.tail = strings.NewReader("")
	select {
	case <-m.exited:
	case <-m.ctx.Done():
		return
	}
	all, err := m.rest(m.ctx)
	if err != nil || int64(len(all)) <= m.read {
		return
	}
	m.tail = strings.NewReader(all[m.read:])
}

func (m *mended) Close() error { return m.stream.Close() }
