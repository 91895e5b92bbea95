// Package browser opens a page in headless Chromium (through the DevTools
// protocol, chromedp) and reports what a user would see: messages on the
// console, every request the page made, what each figure drew, and
// screenshots at the widths asked for. Tests check ctrbench's HTML report
// with it; nothing in the binary imports it.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Figure is what the browser drew of one <figure class="fig">.
type Figure struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Series counts <g class="series">; Points counts the drawn values:
	// elements of class "pt" with a size, inside their SVG, and the
	// vertices of CDF curves.
	Series int `json:"series"`
	Points int `json:"points"`
	// Outside counts "pt" elements without a size or outside their SVG.
	Outside int `json:"outside"`
}

// View is the page at one width.
type View struct {
	Width int
	// ScrollWidth is the document's width: more than Width means the page
	// scrolls sideways.
	ScrollWidth int
	Screenshot  []byte // PNG of the whole page
}

// Report is what opening a page showed.
type Report struct {
	Console  []string // errors and warnings: console calls, exceptions, browser log entries
	Requests []string // every URL the page asked for, the page itself included
	Figures  []Figure
	Views    []View
	// Results are the values of the scripts Open was given, in order.
	Results []string
}

// Path finds Chromium: chromium, chromium-browser or google-chrome on PATH.
func Path() (string, error) {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium on PATH (chromium, chromium-browser, google-chrome): scripts/setup.sh installs it")
}

// countJS counts, per figure, what was drawn.
const countJS = `Array.from(document.querySelectorAll("figure.fig")).map(function (f) {
  var svg = f.querySelector("svg"), sb = svg ? svg.getBoundingClientRect() : null;
  var r = {id: f.id, kind: f.dataset.kind, series: f.querySelectorAll(".series").length, points: 0, outside: 0};
  f.querySelectorAll(".pt").forEach(function (p) {
    var b = p.getBoundingClientRect();
    if (sb && b.width > 0 && b.height > 0 && b.left >= sb.left - 1 && b.right <= sb.right + 1 && b.top >= sb.top - 1 && b.bottom <= sb.bottom + 1) r.points++; else r.outside++;
  });
  f.querySelectorAll("path.cdf").forEach(function (p) {
    var b = p.getBoundingClientRect();
    if (sb && b.left >= sb.left - 1 && b.right <= sb.right + 1 && b.top >= sb.top - 1 && b.bottom <= sb.bottom + 1) r.points += (p.getAttribute("d").match(/[ML]/g) || []).length; else r.outside++;
  });
  return r;
})`

// Open loads the HTML file at path in headless Chromium and looks at it at
// each width (CSS pixels), then evaluates each script (a JavaScript
// expression whose value is a string) as a user's action would run.
func Open(ctx context.Context, path string, widths []int, scripts ...string) (Report, error) {
	exe, err := Path()
	if err != nil {
		return Report{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Report{}, err
	}
	pageURL := (&url.URL{Scheme: "file", Path: abs}).String()
	// Chromium's profile and the temporary directories it makes itself
	// (org.chromium.Chromium.*, which it leaves when it is killed) live
	// in one directory of ours, removed once Chromium has ended.
	tmp, err := os.MkdirTemp("", "ctrbench-chromium-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(tmp)
	actx, cancelA := chromedp.NewExecAllocator(ctx, allocatorOptions(exe, tmp)...)
	defer cancelA()
	rec := &recorder{}
	cctx, cancelC := chromedp.NewContext(actx, chromedp.WithListener(rec.listen))
	defer cancelC()
	cctx, cancelT := context.WithTimeout(cctx, 2*time.Minute)
	defer cancelT()
	if err := chromedp.Do(cctx, chromedp.EmulateViewport(int64(widths[0]), 900), chromedp.Navigate(pageURL)); err != nil {
		return Report{}, fmt.Errorf("open %s in Chromium: %w", pageURL, err)
	}
	for _, w := range widths {
		view, figs, err := look(cctx, w)
		if err != nil {
			return Report{}, err
		}
		if rec.rep.Figures == nil {
			rec.rep.Figures = figs
		}
		rec.rep.Views = append(rec.rep.Views, view)
	}
	for _, js := range scripts {
		v, err := chromedp.Run(cctx, chromedp.Evaluate[string](js))
		if err != nil {
			return Report{}, fmt.Errorf("script %q: %w", js, err)
		}
		rec.rep.Results = append(rec.rep.Results, v)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.rep, nil
}

// allocatorOptions are how Chromium (exe) is started: headless, its
// profile and temporary files under tmp, and no way off the machine.
func allocatorOptions(exe, tmp string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.UserDataDir(filepath.Join(tmp, "profile")), chromedp.Env("TMPDIR="+tmp),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("hide-scrollbars", true), chromedp.Flag("mute-audio", true),
		// Nothing the page asks for may leave the machine: names resolve
		// to nothing and every request goes to a closed loopback port.
		// Requests are still seen (and reported) before they fail.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"))
}

// recorder collects the report while the page runs: the browser's events
// arrive on chromedp's goroutines, so they are recorded under mu.
type recorder struct {
	mu  sync.Mutex
	rep Report
}

// listen records an event the page caused: a request it made, an
// exception, an error or warning on its console or in the browser's log.
func (r *recorder) listen(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		r.rep.Requests = append(r.rep.Requests, e.Request.URL)
	case *runtime.EventExceptionThrown:
		r.rep.Console = append(r.rep.Console, "exception: "+e.ExceptionDetails.Text+describe(e.ExceptionDetails.Exception))
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, describe(a))
			}
			r.rep.Console = append(r.rep.Console, string(e.Type)+": "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			r.rep.Console = append(r.rep.Console, fmt.Sprintf("%s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// look sets the page's width to w and reports what it shows there: the
// document's width, a screenshot, and what each figure drew.
func look(cctx context.Context, w int) (View, []Figure, error) {
	if err := chromedp.Do(cctx, chromedp.EmulateViewport(int64(w), 900)); err != nil {
		return View{}, nil, fmt.Errorf("width %d: %w", w, err)
	}
	figs, err := chromedp.Run(cctx, chromedp.Evaluate[[]Figure](countJS))
	if err != nil {
		return View{}, nil, fmt.Errorf("count figures at width %d: %w", w, err)
	}
	sw, err := chromedp.Run(cctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth"))
	if err != nil {
		return View{}, nil, fmt.Errorf("page width at %d: %w", w, err)
	}
	shot, err := chromedp.Run(cctx, chromedp.FullScreenshot(100))
	if err != nil {
		return View{}, nil, fmt.Errorf("screenshot at width %d: %w", w, err)
	}
	return View{Width: w, ScrollWidth: sw, Screenshot: shot}, figs, nil
}

// describe renders a remote object for a message.
func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Description != "" {
		return o.Description
	}
	return strings.Trim(string(o.Value), `"`)
}
