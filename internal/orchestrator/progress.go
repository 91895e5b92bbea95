package orchestrator

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/schedule"
)

// Progress prints one live line while a campaign runs: trial k/N, the cell,
// elapsed time and ETA. On a terminal the line is rewritten in place and
// failures stay on screen; elsewhere (CI, a pipe) each trial is one line.
type Progress struct {
	mu     sync.Mutex // Note comes from another goroutine
	w      io.Writer
	tty    bool
	total  int // planned trials
	todo   int // to run in this invocation (fewer when resuming)
	done   int
	start  time.Time
	active bool
}

// NewProgress writes to w; tty says whether w is a terminal. A nil
// *Progress prints nothing.
func NewProgress(w io.Writer, tty bool) *Progress { return &Progress{w: w, tty: tty} }

// Notes is where platforms write set-up notes (image builds and the like).
func (p *Progress) Notes() io.Writer {
	if p == nil {
		return io.Discard
	}
	return p.w
}

func (p *Progress) Begin(total, todo int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.todo, p.start = total, todo, time.Now()
	if todo < total {
		fmt.Fprintf(p.w, "resuming: %d of %d trials left\n", todo, total)
	}
}

func (p *Progress) eta() string {
	el := time.Since(p.start)
	if p.done == 0 {
		return fmt.Sprintf("elapsed %s", fmtDur(el))
	}
	left := time.Duration(float64(el) / float64(p.done) * float64(p.todo-p.done))
	return fmt.Sprintf("elapsed %s, ETA %s", fmtDur(el), fmtDur(left))
}

func label(pt schedule.Trial, c result.Cell) string {
	s := fmt.Sprintf("%s %s rep %d", c.Workload, result.FactorString(c.Factors), pt.Repetition)
	if pt.Warmup {
		s += " (warm-up)"
	}
	return s
}

func (p *Progress) Start(pt schedule.Trial, c result.Cell) {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s · %s", pt.Seq, p.total, label(pt, c), p.eta())
	p.active = true
}

func (p *Progress) End(pt schedule.Trial, c result.Cell, t result.Trial) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	took := t.Ended.Sub(t.Started).Round(100 * time.Millisecond)
	var detail string
	if t.Status == result.OK {
		if len(t.Observations) > 0 {
			o := t.Observations[0]
			detail = fmt.Sprintf("%s=%.4g %s", o.ID(), o.Value, o.Unit)
		}
	} else {
		detail = firstLine(t.Error)
	}
	line := fmt.Sprintf("[%d/%d] %-7s %s · %s (%s) · %s", pt.Seq, p.total, t.Status, label(pt, c), detail, took, p.eta())
	if p.tty {
		if t.Status == result.OK {
			fmt.Fprintf(p.w, "\r\033[K%s", line)
			return
		}
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
		p.active = false
		return
	}
	fmt.Fprintln(p.w, line)
}

// Note prints a line of its own, between the trials' lines: on a
// terminal, the live line is cleared first. It is safe while a trial
// runs.
func (p *Progress) Note(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.active {
		fmt.Fprint(p.w, "\r\033[K")
		p.active = false
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.active {
		fmt.Fprintln(p.w)
		p.active = false
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

func fmtDur(d time.Duration) string {
	d = d.Round(time.Second)
	m := int(d.Minutes())
	return fmt.Sprintf("%d:%02d", m, int(d.Seconds())-60*m)
}
