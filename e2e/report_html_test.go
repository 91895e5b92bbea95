package e2e

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/browser"
	"github.com/ctrbench/ctrbench/internal/htmlreport"
	"github.com/ctrbench/ctrbench/internal/store"
)

// TestHTMLReportInChromium runs a real campaign with `run --html` — TCP
// throughput over message sizes (lines on a log axis with interval bands,
// their ratio to the baseline), request/response (bars, and the CDF of
// every round trip from the stored histograms) on host processes and
// containers — and opens the report in headless Chromium the way a
// reader does, at 1280 and 390 CSS pixels: no console error, no request
// for anything outside the file, every figure drawn with the series and
// points the report computed, nothing outside its plot, no sideways
// scrolling on a phone, and a screenshot at each width (kept in
// $CTRBENCH_ARTIFACTS when set).
func TestHTMLReportInChromium(t *testing.T) {
	requireDocker(t)
	if _, err := browser.Path(); err != nil {
		t.Fatal(err)
	}
	exp := writeExperiment(t, `name: e2e-html
seed: 7
repetitions: 2
warmup: 0
factors:
  platform: [native, docker]
  network: [host]
  param.message_size: [1KiB, 8KiB, 64KiB]
baseline: {platform: native}
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 300ms}}
  - {name: rr, type: net.tcp_rr, params: {duration: 300ms}}
`)
	dir := t.TempDir()
	db, page := filepath.Join(dir, "r.db"), filepath.Join(dir, "report.html")
	r := ctrbench(t, 10*time.Minute, "run", exp, "--db", db, "--no-report", "--html", page)
	id := campaignID(t, r.stderr)
	assertNothingLeft(t, id)
	if r.code != 0 || !strings.Contains(r.stderr, "HTML report of campaign "+id+" written to "+page) {
		t.Fatalf("run exited %d:\n%s", r.code, r.stderr)
	}

	// What the report computed: every figure's series and points.
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := htmlreport.Build(context.Background(), s, htmlreport.Options{Campaign: id})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{}
	kinds := map[string]int{}
	for _, sec := range p.Sections {
		for _, f := range sec.Figures {
			want[f.ID] = [2]int{f.Series, f.Points}
			kinds[f.Kind]++
		}
	}
	if kinds["lines"] < 2 || kinds["bars"] < 2 || kinds["cdf"] < 1 {
		t.Errorf("figures by kind %v: want lines (throughput and its ratio over message size), bars and a CDF", kinds)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A reader sorts the trials by seq, twice (descending), and follows a
	// figure's point to its cell's trials.
	const sortTwice = `(function () {
  var th = document.querySelector("#trial-table th");
  th.click(); th.click();
  return document.querySelector("#trial-table tbody tr").id + " " + th.getAttribute("aria-sort");
})()`
	const follow = `(function () {
  var a = document.querySelector("figure.fig svg a[href^='#c']");
  location.hash = a.getAttribute("href");
  window.dispatchEvent(new HashChangeEvent("hashchange"));
  var cell = a.getAttribute("href").slice(2);
  var rows = document.querySelectorAll('#trial-table tr[data-cell="' + cell + '"]');
  var hl = document.querySelectorAll("#trial-table tr.hl");
  return rows.length + " " + hl.length;
})()`
	rep, err := browser.Open(ctx, page, []int{1280, 390}, sortTwice, follow)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Trials) == 0 || rep.Results[0] != "t"+strconv.Itoa(len(p.Trials))+" descending" {
		t.Errorf("sorting the trials by seq twice: %q; want the last trial (t%d) first, descending", rep.Results[0], len(p.Trials))
	}
	if f := strings.Fields(rep.Results[1]); len(f) != 2 || f[0] != f[1] || f[0] == "0" {
		t.Errorf("following a point to its cell: %q (cell's trials, highlighted): want all of them highlighted", rep.Results[1])
	}
	if len(rep.Console) > 0 {
		t.Errorf("console:\n%s", strings.Join(rep.Console, "\n"))
	}
	for _, u := range rep.Requests {
		if u != "file://"+page {
			t.Errorf("the page asked for %s: want nothing but itself", u)
		}
	}
	if len(rep.Figures) != len(want) {
		t.Errorf("the browser shows %d figures; the report has %d", len(rep.Figures), len(want))
	}
	for _, f := range rep.Figures {
		w, ok := want[f.ID]
		switch {
		case !ok:
			t.Errorf("figure %s is drawn but the report has no such figure", f.ID)
		case f.Series != w[0] || f.Points != w[1] || f.Outside != 0:
			t.Errorf("figure %s (%s): drawn %d series, %d points, %d outside its plot; want %d series, %d points", f.ID, f.Kind, f.Series, f.Points, f.Outside, w[0], w[1])
		case f.Points == 0:
			t.Errorf("figure %s draws nothing", f.ID)
		}
	}
	out := os.Getenv("CTRBENCH_ARTIFACTS")
	if out == "" {
		out = dir
	}
	for _, v := range rep.Views {
		if v.ScrollWidth > v.Width {
			t.Errorf("at %d px the page is %d px wide: it scrolls sideways", v.Width, v.ScrollWidth)
		}
		if len(v.Screenshot) < 24 || string(v.Screenshot[1:4]) != "PNG" || int(binary.BigEndian.Uint32(v.Screenshot[16:20])) != v.Width {
			t.Errorf("screenshot at %d px: not a PNG of that width", v.Width)
			continue
		}
		shot := filepath.Join(out, "e2e-html-"+strconv.Itoa(v.Width)+".png")
		if err := os.WriteFile(shot, v.Screenshot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", shot)
	}
}
